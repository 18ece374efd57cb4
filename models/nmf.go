package models

import (
	"github.com/stirank/stirank/tensor"
)

func init() {
	info := poissonInfo("nmf", 2, "Poisson NMF X ~ Poisson(W Hᵀ), W, H ~ Exp(rates) (ICASSP 2016; exact evidence at rank 1)")
	info.DefaultForOrder = true
	info.Exact = func(data *tensor.Sparse, R int, p Params) (float64, error) {
		if R != 1 {
			return 0, ErrNoExact
		}
		rates := p.Nums("rates")
		return Rank1LogEvidence(data, rates[0], rates[1])
	}
	Register(info)
}
