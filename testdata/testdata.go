// Package testdata embeds small datasets with known answers, drawn from the models' generative
// processes by "stirank generate", so that tests and the README's first command run without
// files on disk. README.md beside this file lists the command line that made each one; every
// dataset directory holds truth.json with the true rank and parameters.
package testdata

import (
	"embed"
	"io/fs"
)

//go:embed default nmf30x20r3 cp10x15x20r3 gauss5000r5
var files embed.FS

// FS holds one dataset directory per name in Names; read them with tensorio.ReadFS.
var FS fs.FS = files

// Default is the dataset stirank runs on when it is given none: Poisson NMF, 30×20, true rank 3.
const Default = "default"

// Names lists the embedded datasets.
var Names = []string{Default, "nmf30x20r3", "cp10x15x20r3", "gauss5000r5"}
