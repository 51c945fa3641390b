package partition

import (
	"bufio"
	"cmp"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tabuladb/tabula/internal/keyorder"
)

// RangeInfo describes one range partition: the PartitionKeys [Low, High).
// High is "" for the last range, which has no upper bound (no range can end
// at "", the smallest key, so the empty High is unambiguous).
type RangeInfo struct {
	Low, High string
	// Entities and Bytes are the stored data reported by RecordWrite. After
	// a split they are estimated for each half (from a sample of inserted
	// keys); the table's totals stay exact.
	Entities, Bytes int64
	// Rate is the recent offered load in entities/s (over Balance.Window).
	Rate float64
	// Offered counts entities offered since the last reset; Throttled those
	// of them refused by a limit (or that would have been, when observing).
	Offered, Throttled int64
	// Splits is how many splits produced this range.
	Splits int
	// Offline is set while the range is offline after a split.
	Offline bool
	// ThrottledHistory is the entities of Throttled per HistoryInterval over the last
	// HistoryLen intervals, oldest first, the last holding Report.At; nil when none were.
	ThrottledHistory []int64
}

// KeyInfo describes one hot PartitionKey.
type KeyInfo struct {
	PartitionKey string
	Rate         float64 // recent offered entities/s
	Offered      int64   // entities offered while the key was tracked
	Throttled    int64   // entities refused by its partition limit
}

// TableReport is one table's part of a Report.
type TableReport struct {
	Name string
	// Account is the storage account the table belongs to ("" for the default one).
	Account         string
	Entities, Bytes int64
	Rate            float64
	Offered         int64
	Throttled       int64
	Splits, Merges  int64
	Ranges          []RangeInfo
	// HotKeys are the PartitionKeys at half their limit or more, or that
	// were throttled, hottest first (at most 10). Empty with LimitOff, which
	// tracks no keys.
	HotKeys []KeyInfo
}

// Report is a heat report: what a partition stress test asks a user to examine ("Design a scalable
// partitioning strategy for Azure Table storage": compare each partition's throughput with its
// 2,000 entities/s target; "How to get most out of Windows Azure Tables": look for ServerBusy under
// load).
type Report struct {
	At            time.Time
	Mode          LimitMode
	PartitionRate float64 // limit, entities/s per PartitionKey
	AccountRate   float64 // limit, entities/s for each account

	Entities, Bytes int64
	Rate            float64 // recent offered entities/s, all tables
	Offered         int64
	// ThrottledPartition and ThrottledAccount count entities refused (or,
	// observing, that would have been) by each kind of limit; the account
	// limits of every account add to ThrottledAccount.
	ThrottledPartition int64
	ThrottledAccount   int64
	// ThrottledPartitionHistory and ThrottledAccountHistory spread the same counts over
	// time: entities per HistoryInterval over the last HistoryLen intervals, oldest first,
	// the last holding At; nil when none were throttled then. ResetStats keeps them.
	ThrottledPartitionHistory []int64
	ThrottledAccountHistory   []int64

	Tables []TableReport
}

// Report takes a heat report of the service now: every storage account's tables, under the
// service's limits (see AccountReport for one account's).
func (svc *Service) Report() Report { return svc.report(nil) }

// report takes a heat report of one account's tables (sc), or of every account's (nil).
func (svc *Service) report(sc *scope) Report {
	at := svc.now()
	now := at.UnixNano()
	kl, al, mode := svc.keyLimit.Load(), svc.acctLimit.Load(), svc.limitMode()
	throttledPartition, throttledAccount, history := &svc.throttledPartition, &svc.throttledAccount, &svc.history
	if sc != nil {
		kl, al, mode = sc.keyLimit.Load(), sc.acctLimit.Load(), LimitMode(sc.mode.Load())
		throttledPartition, throttledAccount, history = &sc.throttledPartition, &sc.throttledAccount, &sc.history
	}
	rep := Report{
		At:                 at,
		Mode:               mode,
		PartitionRate:      kl.rate,
		AccountRate:        al.rate,
		ThrottledPartition: throttledPartition.Load(),
		ThrottledAccount:   throttledAccount.Load(),
	}
	history.fill(&rep, now)
	hotRate := kl.rate / 2
	if !kl.enabled {
		hotRate = svc.bal.splitAbove / 2
	}
	for _, t := range svc.tableList() {
		if sc != nil && t.sc != sc {
			continue
		}
		t.mu.Lock()
		tr := TableReport{Name: t.name, Account: t.account, Ranges: t.rangeInfos(now), Splits: t.splits, Merges: t.merges}
		t.mu.Unlock()
		for _, r := range tr.Ranges {
			tr.Entities += r.Entities
			tr.Bytes += r.Bytes
			tr.Rate += r.Rate
			tr.Offered += r.Offered
			tr.Throttled += r.Throttled
		}
		if LimitMode(t.sc.mode.Load()) != LimitOff {
			tr.HotKeys = t.hotKeys(now, hotRate)
		}
		rep.Entities += tr.Entities
		rep.Bytes += tr.Bytes
		rep.Rate += tr.Rate
		rep.Offered += tr.Offered
		rep.Tables = append(rep.Tables, tr)
	}
	return rep
}

func sortKeyInfos(ks []KeyInfo) {
	slices.SortFunc(ks, func(x, y KeyInfo) int {
		if c := cmp.Compare(y.Rate, x.Rate); c != 0 {
			return c
		}
		if c := cmp.Compare(y.Throttled, x.Throttled); c != 0 {
			return c
		}
		return keyorder.CompareKeys(x.PartitionKey, y.PartitionKey)
	})
}

// String renders the report as fixed-width text tables.
func (r Report) String() string {
	var sb strings.Builder
	r.WriteTo(&sb)
	return sb.String()
}

const keyWidth = 24

// counted says how many of a thing there are: "1 range partition", "2 entities".
func counted[N int | int64](n N, one string) string {
	switch {
	case n == 1:
		return "1 " + one
	case strings.HasSuffix(one, "y"):
		return fmt.Sprintf("%d %sies", n, strings.TrimSuffix(one, "y"))
	}
	return fmt.Sprintf("%d %ss", n, one)
}

// WriteTo writes the report as fixed-width text tables: a summary of the service,
// then per table its range partitions and hot PartitionKeys. Keys are
// quoted (so blanks and control characters show) and cut to 24 columns.
func (r Report) WriteTo(w io.Writer) (int64, error) {
	cw := &countWriter{w: w}
	bw := bufio.NewWriter(cw)
	fmt.Fprintf(bw, "heat report at %s  limits: %s, %s/s per PartitionKey, %s/s per account\n",
		r.At.UTC().Format(time.RFC3339), r.Mode, num(r.PartitionRate), num(r.AccountRate))
	fmt.Fprintf(bw, "account: %s, %s, %s, %.1f entities/s offered, throttled entities: %d by partition limit, %d by account limit\n",
		counted(len(r.Tables), "table"), counted(r.Entities, "entity"), size(r.Bytes), r.Rate, r.ThrottledPartition, r.ThrottledAccount)
	for _, t := range r.Tables {
		fmt.Fprintf(bw, "\ntable %s: %s, %s, %s, %.1f entities/s offered, %d offered, %d throttled, %s, %s\n",
			strconv.QuoteToASCII(t.Name), counted(len(t.Ranges), "range partition"), counted(t.Entities, "entity"), size(t.Bytes),
			t.Rate, t.Offered, t.Throttled, counted(t.Splits, "split"), counted(t.Merges, "merge"))
		fmt.Fprintf(bw, "  %4s  %-*s  %-*s  %10s  %10s  %11s  %10s  %10s  %6s\n",
			"#", keyWidth, "LOW (INCL.)", keyWidth, "HIGH (EXCL.)", "ENTITIES", "BYTES", "ENTITIES/S", "OFFERED", "THROTTLED", "SPLITS")
		for i, rg := range t.Ranges {
			low, high := quoteKey(rg.Low), quoteKey(rg.High)
			if rg.Low == "" {
				low = "(start)"
			}
			if rg.High == "" {
				high = "(end)"
			}
			off := ""
			if rg.Offline {
				off = "  offline"
			}
			fmt.Fprintf(bw, "  %4d  %-*s  %-*s  %10d  %10s  %11.1f  %10d  %10d  %6d%s\n",
				i, keyWidth, low, keyWidth, high, rg.Entities, size(rg.Bytes), rg.Rate, rg.Offered, rg.Throttled, rg.Splits, off)
		}
		if len(t.HotKeys) == 0 {
			continue
		}
		fmt.Fprintf(bw, "  hot partition keys:\n")
		fmt.Fprintf(bw, "  %-*s  %11s  %10s  %10s\n", keyWidth, "PARTITIONKEY", "ENTITIES/S", "OFFERED", "THROTTLED")
		for _, k := range t.HotKeys {
			fmt.Fprintf(bw, "  %-*s  %11.1f  %10d  %10d\n", keyWidth, quoteKey(k.PartitionKey), k.Rate, k.Offered, k.Throttled)
		}
	}
	err := bw.Flush()
	return cw.n, err
}

func quoteKey(k string) string {
	q := strconv.QuoteToASCII(k)
	if len(q) > keyWidth {
		q = q[:keyWidth-3] + "..."
	}
	return q
}

func num(v float64) string {
	if v <= 0 {
		return "unlimited"
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

func size(b int64) string {
	const unit = 1024
	if b < unit && b > -unit {
		return strconv.FormatInt(b, 10) + " B"
	}
	v, suffix := float64(b), ""
	for _, s := range []string{"KiB", "MiB", "GiB", "TiB"} {
		v /= unit
		suffix = s
		if v < unit && v > -unit {
			break
		}
	}
	return strconv.FormatFloat(v, 'f', 1, 64) + " " + suffix
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
