package main

import (
	"encoding/xml"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func write(t *testing.T, dir, name, text string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestRun draws the figure of a small experiment (an SVG that parses, and a PNG) and refuses a
// results file with a cell that is not a number, naming the file, row and column.
func TestRun(t *testing.T) {
	dir := t.TempDir()
	results := write(t, dir, "results.csv", "rank,sentence,noise,snr,sdr,input_sdr,si_sdr,input_si_sdr\n16,14,white,0,3.1,0.5,2.0,0.5\n64,14,white,0,5.0,0.5,4.1,0.5\n")
	evidence := write(t, dir, "evidence.csv", "rank,rate,log_evidence,stderr,seconds\n16,2.2,-7608.8,6.3,49\n64,4.4,-7448.8,19.5,84\n")
	out := filepath.Join(dir, "fig")
	if err := run(results, evidence, out); err != nil {
		t.Fatal(err)
	}
	svg, err := os.ReadFile(out + ".svg")
	if err != nil {
		t.Fatal(err)
	}
	d := xml.NewDecoder(strings.NewReader(string(svg)))
	for {
		if _, err := d.Token(); err != nil {
			if !errors.Is(err, io.EOF) {
				t.Errorf("the SVG does not parse: %v", err)
			}
			break
		}
	}
	if fi, err := os.Stat(out + ".png"); err != nil || fi.Size() == 0 {
		t.Errorf("no PNG: %v", err)
	}
	bad := write(t, dir, "bad.csv", "rank,sentence,noise,snr,sdr,input_sdr,si_sdr,input_si_sdr\n16,14,white,0,3.1,0.5,2.0,0.5\n32,14,white,0,NaN,0.5,2.0,0.5\n")
	err = run(bad, "", filepath.Join(dir, "bad"))
	if err == nil || !strings.Contains(err.Error(), "bad.csv row 3: column sdr") {
		t.Errorf("bad results: %v", err)
	}
}
