// Command grow replays the growth of a dataset for stirank reanalyze: it writes the cells of the
// first CUT indices along one mode as one CSV file and the rest as another, so that `stirank
// import` of the first and `stirank append` of the second reproduce the dataset in two versions,
// and prints the exact rank-1 Poisson evidence of both versions under Exp(rate) priors, the
// reference a warm rank-1 estimate is checked against.
//
//	go run ./bench/grow -data D -mode 1 -cut 200 -rate 0.3 -first a.csv -rest b.csv
//	stirank import --in a.csv --shape 257x200 --out G
//	stirank reanalyze --data G --state S --ranks 1 --rate 0.3
//	stirank append --data G --in b.csv
//	stirank reanalyze --data G --state S --ranks 1 --rate 0.3
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"strings"

	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem/local"

	"github.com/stirank/stirank/io/tensorio"
	"github.com/stirank/stirank/models"
	"github.com/stirank/stirank/tensor"
)

func main() {
	log.SetFlags(0)
	data := flag.String("data", "", "dataset directory")
	mode := flag.Int("mode", 0, "the mode the data grow along (0-based)")
	cut := flag.Int("cut", 0, "indices of that mode in the first version")
	rate := flag.Float64("rate", 1, "rate of every mode's Exp prior, for the exact rank-1 evidence")
	first := flag.String("first", "", "CSV file of the first version's cells")
	rest := flag.String("rest", "", "CSV file of the cells the second version adds")
	flag.Parse()
	ds, err := tensorio.Read(context.Background(), *data, tensorio.ReadOptions{})
	if err != nil {
		log.Fatal(err)
	}
	d := ds.Tensor
	if *mode < 0 || *mode >= d.Order() || *cut < 1 || *cut >= d.Shape[*mode] || *first == "" || *rest == "" {
		log.Fatalf("usage: grow -data D -mode M -cut C -rate λ -first A.csv -rest B.csv, with 0 < C < the extent of mode M (%v)", d.Shape)
	}
	rates := make([]float64, d.Order())
	for m := range rates {
		rates[m] = *rate
	}
	a := d.Slab(*mode, 0, *cut)
	if err := writeCSV(*first, a); err != nil {
		log.Fatal(err)
	}
	if err := writeCSV(*rest, d.Slab(*mode, *cut, d.Shape[*mode])); err != nil {
		log.Fatal(err)
	}
	for _, v := range []struct {
		name string
		t    *tensor.Sparse
	}{{"first version", a}, {"both", d}} {
		e, err := models.Rank1LogEvidence(v.t, rates)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%s: shape %v, exact log p(X | R = 1) = %.4f\n", v.name, v.t.Shape, e)
	}
}

// writeCSV writes the cells of t as a CSV file with 0-based coordinates, as stirank import reads it.
func writeCSV(path string, t *tensor.Sparse) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	names := []string{"i", "j", "k"}[:t.Order()]
	fmt.Fprintf(w, "%s,value\n", strings.Join(names, ","))
	for n, v := range t.Values {
		for m := range t.Order() {
			fmt.Fprintf(w, "%d,", t.Coords[m][n])
		}
		fmt.Fprintf(w, "%g\n", v)
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
