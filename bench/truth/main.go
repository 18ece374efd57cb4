// Command truth prints, for a Poisson NMF or CP dataset made by stirank generate, the figures that
// say whether its generating rank can win at the prior it was drawn with: the exact rank-1
// evidence (models.Rank1LogEvidence), the rank-1 maximum log-likelihood (the product of the
// margins) and their difference, rank 1's Occam factor, per row with counts; and the
// log-likelihood of the generating factors (truth.json), with its gain over the rank-1 maximum.
// Each further component costs an Occam factor of its own over as many rows, so where the
// generating factors gain less than a component costs, the evidence prefers fewer components than
// the data were drawn with, and rightly so: their rows carry too few counts to tell them apart.
//
//	stirank generate --model cp --shape 42390x39986x1506 --rank 5 --rate 234 --row-shape 0.3 --seed 3 --out D
//	go run ./bench/truth D
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"math"
	"os"
	"path/filepath"

	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem/local"

	"github.com/stirank/stirank/io/tensorio"
	"github.com/stirank/stirank/models"
)

func main() {
	if len(os.Args) != 2 {
		log.Fatal("usage: go run ./bench/truth DATASET")
	}
	dir := os.Args[1]
	ds, err := tensorio.Read(context.Background(), dir, tensorio.ReadOptions{Counts: true})
	if err != nil {
		log.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "truth.json"))
	if err != nil {
		log.Fatal(err)
	}
	var truth models.PoissonTruth
	if err := json.Unmarshal(b, &truth); err != nil {
		log.Fatalf("%s: %v", filepath.Join(dir, "truth.json"), err)
	}
	d := ds.Tensor
	if len(truth.Factors) != d.Order() {
		log.Fatalf("%s: factors of %d modes for data of order %d", filepath.Join(dir, "truth.json"), len(truth.Factors), d.Order())
	}
	margins := models.Margins(d)
	n := d.Sum()
	// log p(X | θ) = Σ x log λ − Σ λ − Σ log x!, at the rank-1 maximum (λ = n Π_m M_m[i_m]/n, Σ λ = n)
	// and at the generating factors (Σ λ = Σ_r Π_m colsum_m[r]).
	lgamma := 0.0
	for _, x := range d.Values {
		v, _ := math.Lgamma(x + 1)
		lgamma += v
	}
	rank1, gen := -n-lgamma, -lgamma
	for r := range truth.Rank {
		p := 1.0
		for _, f := range truth.Factors {
			s := 0.0
			for _, row := range f {
				s += row[r]
			}
			p *= s
		}
		gen -= p
	}
	for c, x := range d.Values {
		lam1 := n
		for m, mm := range margins {
			lam1 *= mm[d.Coords[m][c]] / n
		}
		lam := 0.0
		for r := range truth.Rank {
			p := 1.0
			for m, f := range truth.Factors {
				p *= f[d.Coords[m][c]][r]
			}
			lam += p
		}
		rank1 += x * math.Log(lam1)
		gen += x * math.Log(lam)
	}
	rows, all := 0, 0
	for _, mm := range margins {
		all += len(mm)
		for _, v := range mm {
			if v > 0 {
				rows++
			}
		}
	}
	e1, err := models.Rank1LogEvidence(d, truth.Rates)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s: %s of shape %v, %d non-zeros, %.0f counts, %d of %d rows with counts, generated at rank %d\n",
		dir, truth.Model, d.Shape, d.NNZ(), n, rows, all, truth.Rank)
	fmt.Printf("%-42s %16.2f\n", "exact rank-1 log evidence", e1)
	fmt.Printf("%-42s %16.2f  (Occam factor %.2f, %.2f per row with counts)\n", "rank-1 maximum log-likelihood", rank1, rank1-e1, (rank1-e1)/float64(rows))
	fmt.Printf("%-42s %16.2f  (%+.2f over the rank-1 maximum)\n", "log-likelihood at the generating factors", gen, gen-rank1)
}
