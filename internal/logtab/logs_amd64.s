#include "textflag.h"

// func logsAVX(dst, src []float64) bool
//
// Log four arguments at a time, the operations of logtab.go's in its order (no fused
// multiply-adds), so that every lane rounds as Log does: Y0 the arguments' bits, then y and r;
// Y1 the exponent e, then k; Y2 the table index i; Y3 half, then the polynomial; Y4–Y6 c[i],
// inv[i], lg[i]; Y7 scratch and the gathers' masks; Y8–Y15 the constants 1/7 … 1/2, ln2Hi, ln2Lo.
// DX gathers the lanes of special arguments (e − 1 below 0 or above 0x7fd).
TEXT ·logsAVX(SB), NOSPLIT, $0-49
	MOVQ dst_base+0(FP), DI
	MOVQ src_base+24(FP), SI
	MOVQ src_len+32(FP), CX
	LEAQ ·c(SB), R8
	LEAQ ·inv(SB), R9
	LEAQ ·lg(SB), R10
	LEAQ ·logsConst(SB), R11
	LEAQ ·logsBits(SB), R12
	VBROADCASTSD 0(R11), Y8
	VBROADCASTSD 8(R11), Y9
	VBROADCASTSD 16(R11), Y10
	VBROADCASTSD 24(R11), Y11
	VBROADCASTSD 32(R11), Y12
	VBROADCASTSD 40(R11), Y13
	VBROADCASTSD 48(R11), Y14
	VBROADCASTSD 56(R11), Y15
	XORQ AX, AX
	XORQ DX, DX

logs4:
	CMPQ AX, CX
	JGE  logsdone

	VMOVUPD (SI)(AX*8), Y0
	VPSRLQ  $52, Y0, Y1

	// Special lanes: e − 1 > 0x7fd or 0 > e − 1.
	VPBROADCASTQ 0(R12), Y7
	VPSUBQ       Y7, Y1, Y2
	VPBROADCASTQ 8(R12), Y7
	VPCMPGTQ     Y7, Y2, Y3
	VPXOR        Y4, Y4, Y4
	VPCMPGTQ     Y2, Y4, Y4
	VPOR         Y3, Y4, Y3
	VMOVMSKPD    Y3, BX
	ORQ          BX, DX

	// i = (b >> 44) & 0xff, half = i >> 7.
	VPSRLQ       $44, Y0, Y2
	VPBROADCASTQ 16(R12), Y7
	VPAND        Y7, Y2, Y2
	VPSRLQ       $7, Y2, Y3

	// k = float64(e + half − 1023).
	VPADDQ       Y3, Y1, Y1
	VPBROADCASTQ 24(R12), Y7
	VPADDQ       Y7, Y1, Y1
	VBROADCASTSD 64(R11), Y7
	VSUBPD       Y7, Y1, Y1

	// y = fraction | (0x3ff − half) << 52.
	VPSLLQ       $52, Y3, Y3
	VPBROADCASTQ 32(R12), Y7
	VPSUBQ       Y3, Y7, Y3
	VPBROADCASTQ 40(R12), Y7
	VPAND        Y7, Y0, Y0
	VPOR         Y3, Y0, Y0

	VPCMPEQQ   Y7, Y7, Y7
	VGATHERQPD Y7, (R8)(Y2*8), Y4
	VPCMPEQQ   Y7, Y7, Y7
	VGATHERQPD Y7, (R9)(Y2*8), Y5
	VPCMPEQQ   Y7, Y7, Y7
	VGATHERQPD Y7, (R10)(Y2*8), Y6

	// r = (y − c[i])·inv[i].
	VSUBPD Y4, Y0, Y0
	VMULPD Y5, Y0, Y0

	// p = r − r·r·(1/2 − r·(1/3 − r·(1/4 − r·(1/5 − r·(1/6 − r·(1/7)))))).
	VMULPD Y8, Y0, Y3
	VSUBPD Y3, Y9, Y3
	VMULPD Y3, Y0, Y3
	VSUBPD Y3, Y10, Y3
	VMULPD Y3, Y0, Y3
	VSUBPD Y3, Y11, Y3
	VMULPD Y3, Y0, Y3
	VSUBPD Y3, Y12, Y3
	VMULPD Y3, Y0, Y3
	VSUBPD Y3, Y13, Y3
	VMULPD Y0, Y0, Y4
	VMULPD Y3, Y4, Y3
	VSUBPD Y3, Y0, Y3

	// k·ln2Hi + (lg[i] + p + k·ln2Lo).
	VADDPD  Y3, Y6, Y6
	VMULPD  Y15, Y1, Y3
	VADDPD  Y3, Y6, Y6
	VMULPD  Y14, Y1, Y1
	VADDPD  Y6, Y1, Y1
	VMOVUPD Y1, (DI)(AX*8)

	ADDQ $4, AX
	JMP  logs4

logsdone:
	VZEROUPPER
	TESTQ DX, DX
	SETNE ret+48(FP)
	RET
