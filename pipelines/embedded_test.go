package pipelines

import (
	"github.com/stirank/stirank/testdata"
	"github.com/stirank/stirank/transforms"
)

// The tests' sources name the embedded datasets, as the command's do.
func init() { transforms.RegisterEmbedded(testdata.FS) }
