package models

func init() {
	info := poissonInfo("nmf", 2, "Poisson NMF X ~ Poisson(W Hᵀ), W, H ~ Exp(rates) (ICASSP 2016; exact evidence at rank 1)")
	info.DefaultForOrder = true
	info.Exact = exactAtRank1
	Register(info)
}
