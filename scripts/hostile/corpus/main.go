// Command corpus writes the bad inputs of tensorio's test corpus (tensoriotest.Corpus) under a
// directory and lists them for scripts/hostile/run.sh, one a line: name, kind (dataset or text),
// path, text format and the import flags the case is read with ("-" for none), separated by tabs.
package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/stirank/stirank/io/tensorio/tensoriotest"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: corpus DIR")
		os.Exit(2)
	}
	cases, err := tensoriotest.Corpus(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	for _, c := range cases {
		if c.Dataset != "" {
			fmt.Printf("%s\tdataset\t%s\t-\t-\n", c.Name, c.Dataset)
			continue
		}
		flags := []string{"--format", string(c.Format)}
		if c.Options.Kind != "" {
			flags = append(flags, "--kind", string(c.Options.Kind))
		}
		if c.Options.Shape != nil {
			extents := make([]string, len(c.Options.Shape))
			for m, n := range c.Options.Shape {
				extents[m] = strconv.Itoa(n)
			}
			flags = append(flags, "--shape", strings.Join(extents, "x"))
		}
		fmt.Printf("%s\ttext\t%s\t%s\n", c.Name, c.Text, strings.Join(flags, " "))
	}
}
