package server

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tabuladb/tabula"
)

// A $select is deduplicated once per request and capped as the service caps it: 16,000
// copies of one name cost what one does and answer the same, 255 distinct names are
// allowed, and 256 are refused with InvalidInput.
func TestSelectIsDeduplicatedAndCapped(t *testing.T) {
	assert.Equal(t, []string{"A", "B"}, selectList(" A,B,A ,"+strings.Repeat("B,", 16000)+"A"))

	h := newHarness(t, nil)
	h.createTable("Sel")
	for i := range 3 {
		h.insert("Sel", fmt.Sprintf(`{"PartitionKey":"p","RowKey":"%d","A":%d,"B":"b"}`, i, i))
	}
	query := func(sel string) (int, string) {
		resp := h.do(request{method: "GET", target: "/devstoreaccount1/Sel()?$select=" + sel,
			header: map[string]string{"Accept": "application/json;odata=nometadata"}})
		return resp.StatusCode, body(t, resp)
	}
	status, once := query("A,Missing")
	require.Equal(t, 200, status, once)
	assert.Equal(t, `{"value":[{"A":0,"Missing":null},{"A":1,"Missing":null},{"A":2,"Missing":null}]}`, once)
	status, many := query(strings.Repeat("A,Missing,", 8000) + "A")
	require.Equal(t, 200, status, many)
	assert.Equal(t, once, many)

	names := func(n int) string {
		s := make([]string, n)
		for i := range s {
			s[i] = fmt.Sprintf("P%d", i)
		}
		return strings.Join(s, ",")
	}
	status, got := query(names(tabula.MaxSelect))
	require.Equal(t, 200, status, got)
	assert.Equal(t, tabula.MaxSelect, strings.Count(got, ":null")/3, "every selected name the entities lack is null")
	for _, target := range []string{"/devstoreaccount1/Sel()?$select=" + names(tabula.MaxSelect+1),
		"/devstoreaccount1/Sel(PartitionKey='p',RowKey='1')?$select=" + names(tabula.MaxSelect+1)} {
		resp := h.do(request{method: "GET", target: target})
		got := mustStatus(t, resp, 400)
		assert.Contains(t, got, "InvalidInput")
		assert.Contains(t, resp.Header.Get("X-Tabula-Error-Detail"), "more than 255 distinct")
	}
}

// countingContext ends after its Err has been asked a given number of times, so that a test
// can cancel work at an exact point of its progress instead of at a moment in time.
type countingContext struct {
	context.Context
	calls, after atomic.Int64
}

func (c *countingContext) Err() error {
	if c.calls.Add(1) > c.after.Load() {
		return context.Canceled
	}
	return nil
}

// The encoder stops when the client goes away: it looks at the request's context every
// entitiesPerCheck entities and encodes nothing more once it has ended.
func TestEncoderStopsWhenClientGoes(t *testing.T) {
	entities := make([]tabula.Entity, tabula.MaxEntitiesPerPage)
	for i := range entities {
		entities[i] = tabula.Entity{PartitionKey: "p", RowKey: fmt.Sprint(i), Properties: tabula.Properties{"A": tabula.Int32(int32(i))}}
	}
	w := &entityWriter{level: levelMinimal, table: "T"}
	ctx := &countingContext{Context: context.Background()}
	ctx.after.Store(1 << 30)
	b, err := w.appendEntities(ctx, nil, entities)
	require.NoError(t, err)
	assert.Equal(t, int64((len(entities)+entitiesPerCheck-1)/entitiesPerCheck), ctx.calls.Load())
	assert.Equal(t, len(entities), strings.Count(string(b), `"PartitionKey"`))

	ctx = &countingContext{Context: context.Background()}
	ctx.after.Store(2) // gone after two checks: 128 entities encoded
	b, err = w.appendEntities(ctx, nil, entities)
	assert.ErrorIs(t, err, context.Canceled)
	assert.Nil(t, b)
	assert.Equal(t, int64(3), ctx.calls.Load(), "the encoder stopped at its third check, not at the end")
}

// BenchmarkSelect16000Names queries 100 entities with a $select of 16,000 names (255
// distinct ones, repeated), the request that used to cost 37 s of CPU.
func BenchmarkSelect16000Names(b *testing.B) {
	h := newHarness(b, nil)
	h.createTable("Sel")
	for i := range 100 {
		h.insert("Sel", fmt.Sprintf(`{"PartitionKey":"p","RowKey":"%03d","P1":%d,"P2":"b"}`, i, i))
	}
	names := make([]string, 16000)
	for i := range names {
		names[i] = fmt.Sprintf("P%d", i%tabula.MaxSelect)
	}
	target := "/devstoreaccount1/Sel()?$select=" + strings.Join(names, ",")
	b.ResetTimer()
	for range b.N {
		resp := h.do(request{method: "GET", target: target})
		if resp.StatusCode != 200 {
			b.Fatalf("status %d: %s", resp.StatusCode, body(b, resp))
		}
		_ = body(b, resp)
	}
}
