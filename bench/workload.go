package bench

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/tabuladb/tabula"
)

// Shape is the kind of entity a workload writes.
type Shape int

const (
	// ShapePayload is the case study's entity (bench/casestudy): one String property, Payload, of PayloadSize
	// randomly generated ASCII characters.
	ShapePayload Shape = iota
	// ShapeMixed has five properties of five types: Name (String), Count (Int32), Score
	// (Double), Created (DateTime) and Id (Guid).
	ShapeMixed
)

// PayloadSize is the length of the Payload property, in bytes (and UTF-16 code units).
const PayloadSize = 1024

func (s Shape) String() string {
	if s == ShapeMixed {
		return "mixed"
	}
	return "payload"
}

// ParseShape reads "payload" or "mixed".
func ParseShape(s string) (Shape, error) {
	switch s {
	case "", "payload":
		return ShapePayload, nil
	case "mixed":
		return ShapeMixed, nil
	}
	return 0, fmt.Errorf("bench: unknown entity shape %q (want payload or mixed)", s)
}

// Selective filters match exactly one entity in a hundred of a workload (see Workload.Props).
const (
	// PayloadFilter matches the payload entities whose index is a multiple of 100: their
	// Payload starts with 'z', every other one with a hex digit.
	PayloadFilter = "Payload ge 'z'"
	// MixedFilter matches the mixed entities whose index modulo 1,000 is below 10.
	MixedFilter = "Count lt 10"
)

// Filter returns the $filter that matches 1% of the shape's entities.
func (s Shape) Filter() string {
	if s == ShapeMixed {
		return MixedFilter
	}
	return PayloadFilter
}

// payloadVariants is how many distinct payloads a workload cycles through: enough that
// compression and caches see varied data, few enough to build once.
const payloadVariants = 64

// Workload builds the entities of the case study bench/casestudy reruns: GUID PartitionKeys (one per worker
// goroutine, or one shared by all in single-partition tests) and RowKeys
// JobID_VMID_WorkerId_Index, with the Index zero-padded so that a worker's rows are appended
// in key order. Property sets are built once and shared between the entities that carry
// them, as a client reusing its buffers would; the engine never keeps or changes them.
type Workload struct {
	Shape Shape
	JobID string

	rng    *rand.Rand
	plain  []tabula.Properties // payload entities that do not match PayloadFilter
	marked []tabula.Properties // payload entities that match it
	mixed  []tabula.Properties // mixed entities, by index modulo mixedVariants
}

// NewWorkload returns a workload whose keys and payloads are generated from seed.
func NewWorkload(shape Shape, seed uint64) *Workload {
	w := &Workload{
		Shape: shape,
		rng:   rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
	}
	w.JobID = fmt.Sprintf("Job%04d", w.rng.IntN(10000))
	switch shape {
	case ShapePayload:
		for range payloadVariants {
			w.plain = append(w.plain, tabula.Properties{"Payload": tabula.String(w.payload(false))})
			w.marked = append(w.marked, tabula.Properties{"Payload": tabula.String(w.payload(true))})
		}
	case ShapeMixed:
		created := time.Date(2010, 11, 6, 12, 0, 0, 0, time.UTC)
		for i := range mixedVariants {
			var id tabula.Guid
			for j := range id {
				id[j] = byte(w.rng.Uint32())
			}
			w.mixed = append(w.mixed, tabula.Properties{
				"Name":    tabula.String(fmt.Sprintf("%s worker log line %04d: all quiet", w.JobID, i)),
				"Count":   tabula.Int32(i),
				"Score":   tabula.Double(float64(i) / 7),
				"Created": tabula.DateTime(created.Add(time.Duration(i) * time.Second)),
				"Id":      id,
			})
		}
	}
	return w
}

// mixedVariants is how many distinct mixed property sets a workload cycles through; Count
// is the index modulo mixedVariants.
const mixedVariants = 1000

const hexDigits = "0123456789abcdef"

// payload returns PayloadSize random hex digits; a marked one starts with 'z' instead, so
// that it alone matches PayloadFilter.
func (w *Workload) payload(marked bool) string {
	b := make([]byte, PayloadSize)
	for i := range b {
		b[i] = hexDigits[w.rng.IntN(len(hexDigits))]
	}
	if marked {
		b[0] = 'z'
	}
	return string(b)
}

// GUID returns a new random GUID in the service's lower-case text form.
func (w *Workload) GUID() string {
	var g [16]byte
	for i := 0; i < 16; i += 8 {
		v := w.rng.Uint64()
		for j := range 8 {
			g[i+j] = byte(v >> (8 * j))
		}
	}
	g[6] = g[6]&0x0f | 0x40 // version 4
	g[8] = g[8]&0x3f | 0x80 // RFC 4122 variant
	return tabula.Guid(g).String()
}

// GUIDs returns n new random GUIDs.
func (w *Workload) GUIDs(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = w.GUID()
	}
	return out
}

// RowPrefix is the RowKey prefix of one worker: JobID_VMID_WorkerId_.
func (w *Workload) RowPrefix(vm, worker int) string {
	return fmt.Sprintf("%s_VM%02d_W%03d_", w.JobID, vm, worker)
}

// RowKey appends the index, zero-padded to 10 digits, to a worker's prefix.
func RowKey(prefix string, index int) string {
	var digits [20]byte
	d := strconv.AppendInt(digits[:0], int64(index), 10)
	b := make([]byte, 0, len(prefix)+max(len(d), 10))
	b = append(b, prefix...)
	for range 10 - len(d) {
		b = append(b, '0')
	}
	return string(append(b, d...))
}

// Props returns the properties of the entity with the given index, from sets built once:
// payload entities cycle through 64 plain payloads, except that index%100 == 0 selects a
// marked one matching PayloadFilter; mixed entities have Count = index%1000, so that
// index%1000 < 10 matches MixedFilter.
func (w *Workload) Props(index int) tabula.Properties {
	if w.Shape == ShapeMixed {
		return w.mixed[index%mixedVariants]
	}
	if index%100 == 0 {
		return w.marked[index/100%payloadVariants]
	}
	return w.plain[index%payloadVariants]
}

// Matches reports whether the entity with the given index matches the shape's Filter.
func (s Shape) Matches(index int) bool {
	if s == ShapeMixed {
		return index%1000 < 10
	}
	return index%100 == 0
}

// Entity returns the entity with the given keys and index.
func (w *Workload) Entity(pk, rk string, index int) tabula.Entity {
	return tabula.Entity{PartitionKey: pk, RowKey: rk, Properties: w.Props(index)}
}
