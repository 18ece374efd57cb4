package models

// State is where a chain of a model ended: its parameters in the model's sampling
// parameterisation and their layout, so that a later run on the same data, or on data grown by
// new rows, columns or slices, can resume from it.
type State struct {
	// Model is the model's name and Rank its rank; Factors the factor layout of Theta (nil for
	// models whose parameters are not tied to data modes).
	Model   string
	Rank    int
	Factors []Factor
	Theta   []float64
	// Size is the size of the data the state was saved on (their total count for a count model,
	// their number of values otherwise); zero when unknown.
	Size float64
}
