package models

func init() {
	info := poissonInfo("cp", 3, "Poisson CP/PARAFAC x_ijk ~ Poisson(Σ_r a_ir b_jr c_kr), factors ~ Exp(rates) (SPL 2018; exact evidence at rank 1)")
	info.DefaultForOrder = true
	info.Exact = exactAtRank1
	Register(info)
}
