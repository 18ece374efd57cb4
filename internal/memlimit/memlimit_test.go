package memlimit

import (
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	limit, what := Limit()
	if limit <= 0 || what == "" {
		t.Fatalf("Limit() = %d, %q", limit, what)
	}
	if err := Check("a small input", 1<<20); err != nil {
		t.Fatal(err)
	}
	err := Check("shape 1000000000x1000000000", 1e30)
	if err == nil || !strings.Contains(err.Error(), "shape 1000000000x1000000000 needs about") {
		t.Fatalf("Check of 1e30 bytes: %v", err)
	}
}
