package pipelines

import (
	"context"
	"fmt"

	"github.com/stirank/stirank/baselines"
	"github.com/stirank/stirank/estimators"
)

// BaselineResult is the evidence.json of a baseline (stirank chib or ais) read with its method's
// configuration: Chib or AIS is set, as Method says.
type BaselineResult struct {
	Result
	Chib *estimators.ChibConfig `json:"-"`
	AIS  *estimators.AISConfig  `json:"-"`
}

// ParseBaselineResult decodes a baseline's evidence.json.
func ParseBaselineResult(b []byte) (BaselineResult, error) {
	r, err := ParseResult(b)
	if err != nil {
		return BaselineResult{}, err
	}
	br := BaselineResult{Result: r}
	var config any
	switch r.Method {
	case baselines.MethodChib:
		br.Chib = new(estimators.ChibConfig)
		config = br.Chib
	case baselines.MethodAIS:
		br.AIS = new(estimators.AISConfig)
		config = br.AIS
	default:
		return br, fmt.Errorf("evidence.json: method %q is not a baseline", r.Method)
	}
	if err := r.DecodeConfig(config); err != nil {
		return br, fmt.Errorf("evidence.json: %s configuration: %w", r.Method, err)
	}
	return br, nil
}

// ReadBaselineResult reads dir/evidence.json of a baseline (dir a local path or a URL).
func ReadBaselineResult(ctx context.Context, dir string) (BaselineResult, error) {
	js, err := readEvidenceJSON(ctx, dir)
	if err != nil {
		return BaselineResult{}, err
	}
	return ParseBaselineResult(js)
}
