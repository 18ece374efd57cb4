#include "textflag.h"

// LANES adds the four lanes of Y (X its low half, T scratch) into its first: (l0 + l2) + (l1 + l3).
#define LANES(Y, X, T) \
	VEXTRACTF128 $1, Y, T \
	VADDPD       T, X, X  \
	VHADDPD      X, X, X

// The loops of vec_go.go in AVX2: Y registers hold four lanes of float64, and every product is
// added by a fused multiply-add (VFMADD231PD b, a, acc: acc += a·b).

// func mulAVX(dst, x, y []float64)
TEXT ·mulAVX(SB), NOSPLIT, $0-72
	MOVQ dst_base+0(FP), DI
	MOVQ dst_len+8(FP), CX
	MOVQ x_base+24(FP), SI
	MOVQ y_base+48(FP), BX
	XORQ AX, AX

mul4:
	LEAQ    4(AX), DX
	CMPQ    DX, CX
	JGT     multail
	VMOVUPD (SI)(AX*8), Y0
	VMULPD  (BX)(AX*8), Y0, Y0
	VMOVUPD Y0, (DI)(AX*8)
	MOVQ    DX, AX
	JMP     mul4

multail:
	CMPQ   AX, CX
	JGE    muldone
	VMOVSD (SI)(AX*8), X0
	VMULSD (BX)(AX*8), X0, X0
	VMOVSD X0, (DI)(AX*8)
	INCQ   AX
	JMP    multail

muldone:
	VZEROUPPER
	RET

// PICK sets BX to the first index of p (base SI, length R9) whose running sum exceeds v (X0), for
// the sums of p's blocks of 8 (base DI, count CX): the block by a count of the sums before the
// last at or below v, four at a time (VCMPPD, VMOVMSKPD, POPCNT), the index by a count of the
// block's running sums at or below v, added one after the other from the sum of the blocks
// before. UCOMISD sets the carry where v is below the sum, and SBB $-1 adds one where it is not.
// It uses AX, DX, R10, X1, X2, Y8–Y10; the labels are the macro's arguments.
#define PICK(blk4, blk1, blkdone, first, scan, full, done) \
	DECQ         CX                 \
	VBROADCASTSD X0, Y8             \
	XORQ         BX, BX             \
	XORQ         DX, DX             \
blk4:                                \
	LEAQ         4(DX), AX          \
	CMPQ         AX, CX             \
	JGT          blk1               \
	VMOVUPD      (DI)(DX*8), Y9     \
	VCMPPD       $2, Y8, Y9, Y10    \
	VMOVMSKPD    Y10, R10           \
	POPCNTL      R10, R10           \
	ADDQ         R10, BX            \
	MOVQ         AX, DX             \
	JMP          blk4               \
blk1:                                \
	CMPQ         DX, CX             \
	JGE          blkdone            \
	MOVSD        (DI)(DX*8), X1     \
	UCOMISD      X1, X0             \
	SBBQ         $-1, BX            \
	INCQ         DX                 \
	JMP          blk1               \
blkdone:                             \
	XORPS        X2, X2             \
	TESTQ        BX, BX             \
	JEQ          first              \
	MOVSD        -8(DI)(BX*8), X2   \
first:                               \
	SHLQ         $3, BX             \
	LEAQ         (SI)(BX*8), AX     \
	LEAQ         8(BX), DX          \
	CMPQ         DX, R9             \
	JLE          full               \
	MOVQ         R9, DX             \
	DECQ         DX                 \
scan:                                \
	CMPQ         BX, DX             \
	JGE          done               \
	ADDSD        (AX), X2           \
	UCOMISD      X2, X0             \
	JCS          done               \
	INCQ         BX                 \
	ADDQ         $8, AX             \
	JMP          scan               \
full:                                \
	ADDSD        (AX), X2           \
	UCOMISD      X2, X0             \
	SBBQ         $-1, BX            \
	ADDSD        8(AX), X2          \
	UCOMISD      X2, X0             \
	SBBQ         $-1, BX            \
	ADDSD        16(AX), X2         \
	UCOMISD      X2, X0             \
	SBBQ         $-1, BX            \
	ADDSD        24(AX), X2         \
	UCOMISD      X2, X0             \
	SBBQ         $-1, BX            \
	ADDSD        32(AX), X2         \
	UCOMISD      X2, X0             \
	SBBQ         $-1, BX            \
	ADDSD        40(AX), X2         \
	UCOMISD      X2, X0             \
	SBBQ         $-1, BX            \
	ADDSD        48(AX), X2         \
	UCOMISD      X2, X0             \
	SBBQ         $-1, BX            \
done:

// MULBLOCKS sets the products and the sums of the whole blocks (MulBlocks) of p (R11, length R9),
// sums (R12), w (R8), a (R10) and b (R13, 0 without), the running total in X3, the blocks done in
// AX and their entries in DX. It uses BX, X0, X1, Y0, Y1; the labels are the macro's arguments.
#define MULBLOCKS(blocks, wonly, done) \
	VXORPD       X3, X3, X3          \
	XORQ         AX, AX              \
	XORQ         DX, DX              \
blocks:                               \
	LEAQ         8(DX), BX           \
	CMPQ         BX, R9              \
	JGT          done                \
	VMOVUPD      (R10)(DX*8), Y0     \
	VMOVUPD      32(R10)(DX*8), Y1   \
	TESTQ        R13, R13            \
	JEQ          wonly               \
	VMULPD       (R13)(DX*8), Y0, Y0 \
	VMULPD       32(R13)(DX*8), Y1, Y1 \
wonly:                                \
	VMULPD       (R8)(DX*8), Y0, Y0  \
	VMULPD       32(R8)(DX*8), Y1, Y1 \
	VMOVUPD      Y0, (R11)(DX*8)     \
	VMOVUPD      Y1, 32(R11)(DX*8)   \
	VADDPD       Y1, Y0, Y0          \
	LANES(Y0, X0, X1)                \
	VADDSD       X0, X3, X3          \
	VMOVSD       X3, (R12)(AX*8)     \
	INCQ         AX                  \
	MOVQ         BX, DX              \
	JMP          blocks              \
done:

// func mulBlocksAVX(p, sums, w, a, b []float64) float64
TEXT ·mulBlocksAVX(SB), NOSPLIT, $0-128
	MOVQ p_base+0(FP), R11
	MOVQ p_len+8(FP), R9
	MOVQ sums_base+24(FP), R12
	MOVQ w_base+48(FP), R8
	MOVQ a_base+72(FP), R10
	MOVQ b_base+96(FP), R13
	MULBLOCKS(mbblocks, mbw, mbdone)
	VZEROUPPER
	MOVSD X3, ret+120(FP)
	RET

// func mulPickAVX(p, sums, w, a, b []float64, u float64) (float64, int)
TEXT ·mulPickAVX(SB), NOSPLIT, $0-144
	MOVQ p_base+0(FP), R11
	MOVQ p_len+8(FP), R9
	MOVQ sums_base+24(FP), R12
	MOVQ w_base+48(FP), R8
	MOVQ a_base+72(FP), R10
	MOVQ b_base+96(FP), R13
	MULBLOCKS(mpblocks, mpw, mpwhole)
	CMPQ   DX, R9
	JGE    mppick
	VXORPD X4, X4, X4 // the last block's sum, its products added one after the other

mppart:
	CMPQ   DX, R9
	JGE    mppartdone
	VMOVSD (R10)(DX*8), X0
	TESTQ  R13, R13
	JEQ    mppartw
	VMULSD (R13)(DX*8), X0, X0

mppartw:
	VMULSD (R8)(DX*8), X0, X0
	VMOVSD X0, (R11)(DX*8)
	VADDSD X0, X4, X4
	INCQ   DX
	JMP    mppart

mppartdone:
	VADDSD X4, X3, X3
	VMOVSD X3, (R12)(AX*8)
	INCQ   AX

mppick:
	VMOVSD X3, ret+128(FP)
	VMULSD u+120(FP), X3, X0
	MOVQ   R11, SI
	MOVQ   R12, DI
	MOVQ   AX, CX
	PICK(mpblk4, mpblk1, mpblkdone, mpfirst, mpscan, mpfull, mpdone)
	VZEROUPPER
	MOVQ   BX, ret1+136(FP)
	RET

// func pickAVX(v float64, p, sums []float64) int
TEXT ·pickAVX(SB), NOSPLIT, $0-64
	MOVSD v+0(FP), X0
	MOVQ  p_base+8(FP), SI
	MOVQ  p_len+16(FP), R9
	MOVQ  sums_base+32(FP), DI
	MOVQ  sums_len+40(FP), CX
	PICK(pblk4, pblk1, pblkdone, pfirst, pscan, pfull, pdone)
	VZEROUPPER
	MOVQ  BX, ret+56(FP)
	RET

// func gramAVX(g, f []float64, k int)
TEXT ·gramAVX(SB), NOSPLIT, $0-56
	MOVQ g_base+0(FP), DI
	MOVQ f_base+24(FP), SI
	MOVQ f_len+32(FP), R8
	MOVQ k+48(FP), CX
	LEAQ (SI)(R8*8), R8 // the end of f
	MOVQ CX, R11
	SHLQ $3, R11        // a row's bytes

gramrow:
	CMPQ SI, R8
	JGE  gramdone
	XORQ AX, AX   // a
	MOVQ DI, R9   // g's row a

gramentry:
	CMPQ         AX, CX
	JGE          gramnext
	VBROADCASTSD (SI)(AX*8), Y0
	MOVQ         AX, DX // c, from a

gram4:
	LEAQ        4(DX), BX
	CMPQ        BX, CX
	JGT         gramtail
	VMOVUPD     (R9)(DX*8), Y1
	VFMADD231PD (SI)(DX*8), Y0, Y1
	VMOVUPD     Y1, (R9)(DX*8)
	MOVQ        BX, DX
	JMP         gram4

gramtail:
	CMPQ        DX, CX
	JGE         gramentrydone
	VMOVSD      (R9)(DX*8), X1
	VFMADD231SD (SI)(DX*8), X0, X1
	VMOVSD      X1, (R9)(DX*8)
	INCQ        DX
	JMP         gramtail

gramentrydone:
	INCQ AX
	ADDQ R11, R9
	JMP  gramentry

gramnext:
	ADDQ R11, SI
	JMP  gramrow

gramdone:
	VZEROUPPER
	RET

// AHEAD prefetches the row of base that idx names for the cell 8 after the current one (R12 of R13,
// rows of R10 bytes), its first and last entries, so that the rows of the cells to come are on
// their way from memory while the current one is computed; tmp is scratch, skip a label.
#define AHEAD(idx, base, tmp, skip) \
	LEAQ       16(R12), tmp     \
	CMPQ       tmp, R13         \
	JGE        skip             \
	MOVLQSX    (idx)(tmp*4), tmp \
	IMULQ      R10, tmp         \
	ADDQ       base, tmp        \
	PREFETCHT0 (tmp)            \
	PREFETCHT0 -8(tmp)(R10*1)   \
skip:

// ROWS starts cell R12 of R13 (jumping to done after the last): BX is the row of f (R8) that ia
// (R9) names, DX the row of fb that ib (R11, 0 without fb) names, 0 without, the rows of the
// cell 8 ahead are prefetched, and Y0–Y3 are zeroed; the labels are the macro's arguments.
#define ROWS(done, ahead, aheadb, nob, fb) \
	CMPQ    R12, R13                      \
	JGE     done                          \
	AHEAD(R9, R8, R14, ahead)             \
	MOVLQSX (R9)(R12*4), BX               \
	IMULQ   R10, BX                       \
	ADDQ    R8, BX                        \
	XORQ    DX, DX                        \
	TESTQ   R11, R11                      \
	JEQ     nob                           \
	AHEAD(R11, fb, R14, aheadb)           \
	MOVLQSX (R11)(R12*4), DX              \
	IMULQ   R10, DX                       \
	ADDQ    fb, DX                        \
nob:                                      \
	VXORPD  Y0, Y0, Y0                    \
	VXORPD  Y1, Y1, Y1                    \
	VXORPD  Y2, Y2, Y2                    \
	VXORPD  Y3, Y3, Y3                    \
	XORQ    AX, AX

// The row loop: for every cell q, the dot products of x and y with the row of f that ia[q] names,
// or with its entrywise product with the row of fb that ib[q] names (VMULPD, then the fused
// multiply-adds): dot2Go's loop (two accumulators per product over blocks of 8, then blocks of 4).
// Where x and y are one vector (DotRows) y's products are not computed and outY gets x's, the
// same bits at half the multiply-adds.

// func dot2RowsAVX(out, outY, x, y, f []float64, ia []int32, fb []float64, ib []int32)
TEXT ·dot2RowsAVX(SB), NOSPLIT, $0-192
	MOVQ out_len+8(FP), R13
	MOVQ x_base+48(FP), SI
	MOVQ x_len+56(FP), CX
	MOVQ y_base+72(FP), DI
	MOVQ f_base+96(FP), R8
	MOVQ ia_base+120(FP), R9
	MOVQ ib_base+168(FP), R11 // 0 without fb
	MOVQ CX, R10
	SHLQ $3, R10
	XORQ R12, R12

d2cell:
	ROWS(d2done, d2ahead, d2aheadb, d2nob, fb_base+144(FP))

d2_8:
	LEAQ        8(AX), R14
	CMPQ        R14, CX
	JGT         d2_4
	VMOVUPD     (BX)(AX*8), Y4
	VMOVUPD     32(BX)(AX*8), Y5
	TESTQ       DX, DX
	JEQ         d2_8w
	VMULPD      (DX)(AX*8), Y4, Y4
	VMULPD      32(DX)(AX*8), Y5, Y5

d2_8w:
	VFMADD231PD (SI)(AX*8), Y4, Y0
	VFMADD231PD 32(SI)(AX*8), Y5, Y1
	CMPQ        SI, DI
	JEQ         d2_8next
	VFMADD231PD (DI)(AX*8), Y4, Y2
	VFMADD231PD 32(DI)(AX*8), Y5, Y3

d2_8next:
	MOVQ        R14, AX
	JMP         d2_8

d2_4:
	LEAQ        4(AX), R14
	CMPQ        R14, CX
	JGT         d2sum
	VMOVUPD     (BX)(AX*8), Y4
	TESTQ       DX, DX
	JEQ         d2_4w
	VMULPD      (DX)(AX*8), Y4, Y4

d2_4w:
	VFMADD231PD (SI)(AX*8), Y4, Y0
	CMPQ        SI, DI
	JEQ         d2_4next
	VFMADD231PD (DI)(AX*8), Y4, Y2

d2_4next:
	MOVQ        R14, AX
	JMP         d2_4

d2sum:
	// a0 + a1 lane by lane for each product, then the lanes (l0 + l2) + (l1 + l3).
	VADDPD Y1, Y0, Y0
	VADDPD Y3, Y2, Y2
	LANES(Y0, X0, X1)
	LANES(Y2, X2, X3)

d2tail:
	CMPQ        AX, CX
	JGE         d2store
	VMOVSD      (BX)(AX*8), X4
	TESTQ       DX, DX
	JEQ         d2tailw
	VMULSD      (DX)(AX*8), X4, X4

d2tailw:
	VFMADD231SD (SI)(AX*8), X4, X0
	CMPQ        SI, DI
	JEQ         d2tailnext
	VFMADD231SD (DI)(AX*8), X4, X2

d2tailnext:
	INCQ        AX
	JMP         d2tail

d2store:
	CMPQ   SI, DI
	JNE    d2storeboth
	VMOVAPD X0, X2

d2storeboth:
	MOVQ   out_base+0(FP), R14
	VMOVSD X0, (R14)(R12*8)
	MOVQ   outY_base+24(FP), R14
	VMOVSD X2, (R14)(R12*8)
	INCQ   R12
	JMP    d2cell

d2done:
	VZEROUPPER
	RET

// func prefetchAVX(f []float64, idx []int32, k int)
TEXT ·prefetchAVX(SB), NOSPLIT, $0-56
	MOVQ f_base+0(FP), R8
	MOVQ idx_base+24(FP), R9
	MOVQ idx_len+32(FP), R13
	MOVQ k+48(FP), R10
	SHLQ $3, R10
	XORQ R12, R12

pfcell:
	CMPQ       R12, R13
	JGE        pfdone
	MOVLQSX    (R9)(R12*4), AX
	IMULQ      R10, AX
	ADDQ       R8, AX
	PREFETCHT0 (AX)
	PREFETCHT0 -8(AX)(R10*1)
	INCQ       R12
	JMP        pfcell

pfdone:
	RET
