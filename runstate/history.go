package runstate

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/parquet-go/parquet-go"
)

// HistoryRow is one row of the history: one (run, rank) pair. The struct tags give the Parquet
// columns; the CSV has the same columns in the same order.
//
// Time is a Parquet TIMESTAMP(MICROS, UTC) column — the precision every engine reads (Spark and
// BigQuery stop at microseconds) — and an RFC 3339 string in UTC in the CSV. Commit truncates
// run times to microseconds so the JSON, Parquet and CSV forms agree exactly.
type HistoryRow struct {
	Time            time.Time `parquet:"time,timestamp(microsecond)"` // run commit time
	RunID           string    `parquet:"run_id"`
	DatasetVersion  int       `parquet:"dataset_version"`
	DatasetChecksum string    `parquet:"dataset_checksum"`
	Rank            int       `parquet:"rank"`
	LogEvidence     float64   `parquet:"log_evidence"`
	StdErr          float64   `parquet:"stderr"`
	PosteriorProb   float64   `parquet:"posterior_prob"`
	ChosenRank      int       `parquet:"chosen_rank"` // the run's BestRank: −1 for none
	Steps           int64     `parquet:"steps"`       // sampler steps spent on this rank in this run
	WarmStart       bool      `parquet:"warm_start"`  // whether the rank's chains started from saved states
}

var csvHeader = []string{"time", "run_id", "dataset_version", "dataset_checksum", "rank",
	"log_evidence", "stderr", "posterior_prob", "chosen_rank", "steps", "warm_start"}

// encodeParquet returns rows as a zstd-compressed Parquet file.
func encodeParquet(rows []HistoryRow) ([]byte, error) {
	var b bytes.Buffer
	if err := parquet.Write(&b, rows, parquet.Compression(&parquet.Zstd)); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// encodeCSV returns rows as CSV with a header. Floats are formatted with the shortest
// representation that parses back to the same value.
func encodeCSV(rows []HistoryRow) ([]byte, error) {
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	w.Write(csvHeader)
	for _, r := range rows {
		w.Write([]string{
			r.Time.UTC().Format(time.RFC3339Nano),
			r.RunID,
			strconv.Itoa(r.DatasetVersion),
			r.DatasetChecksum,
			strconv.Itoa(r.Rank),
			strconv.FormatFloat(r.LogEvidence, 'g', -1, 64),
			strconv.FormatFloat(r.StdErr, 'g', -1, 64),
			strconv.FormatFloat(r.PosteriorProb, 'g', -1, 64),
			strconv.Itoa(r.ChosenRank),
			strconv.FormatInt(r.Steps, 10),
			strconv.FormatBool(r.WarmStart),
		})
	}
	w.Flush()
	return b.Bytes(), w.Error()
}

// HistoryWith returns the history as it will read once run commits with rows: the committed
// history followed by the run's rows, stamped as Commit stamps them. run.Time must be set (and is
// then kept by Commit), so that a report written into the run before its commit shows the run as
// it is committed.
func (d *Dir) HistoryWith(run Run, rows []HistoryRow) ([]HistoryRow, error) {
	if run.Time.IsZero() {
		return nil, errors.New("runstate: HistoryWith needs the run's time")
	}
	stamped, err := stamp(&run, rows)
	if err != nil {
		return nil, err
	}
	history, err := d.History()
	if err != nil {
		return nil, err
	}
	return append(history, stamped...), nil
}

// ReadLatestHistory returns the history of the state directory whose latest/ directory is dir,
// read without taking the lock (the history file is replaced atomically); ok is false when dir is
// not a state directory's latest/.
func ReadLatestHistory(dir string) (rows []HistoryRow, ok bool, err error) {
	dir = filepath.Clean(dir)
	if filepath.Base(dir) != latestDir {
		return nil, false, nil
	}
	file := filepath.Join(filepath.Dir(dir), historyParquet)
	if _, err := os.Stat(file); err != nil {
		return nil, false, nil
	}
	rows, err = parquet.ReadFile[HistoryRow](file)
	if err != nil {
		return nil, false, fmt.Errorf("runstate: reading %s: %w", file, err)
	}
	return rows, true, nil
}
