package transforms

import "github.com/stirank/stirank/testdata"

// The tests' sources name the embedded datasets, as the command's do.
func init() { RegisterEmbedded(testdata.FS) }
