package server

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestBufferPoolReusesWithinItsBounds(t *testing.T) {
	var p bufferPool
	b := p.get(100 << 10)
	assert.GreaterOrEqual(t, cap(b), 100<<10)
	p.put(append(b, "used"...))
	again := p.get(64 << 10)
	assert.Equal(t, cap(b), cap(again), "the buffer given back is reused")
	assert.Empty(t, again, "and handed out empty")
	assert.Zero(t, p.bytes)

	p.put(make([]byte, 0, minPooled-1))
	p.put(make([]byte, 0, pooledBytes/2+1))
	assert.Empty(t, p.free, "too small and too large buffers are not kept")

	for range 3 * pooledBuffers {
		p.put(make([]byte, 0, 4<<20))
	}
	assert.LessOrEqual(t, len(p.free), pooledBuffers)
	assert.LessOrEqual(t, p.bytes, pooledBytes, "the pool keeps at most pooledBytes")
	total := 0
	for _, f := range p.free {
		total += cap(f)
	}
	assert.Equal(t, total, p.bytes)

	// When full, a larger buffer displaces the smallest.
	var q bufferPool
	for range pooledBuffers {
		q.put(make([]byte, 0, minPooled))
	}
	q.put(make([]byte, 0, 1<<20))
	assert.Len(t, q.free, pooledBuffers)
	assert.Equal(t, 1<<20, cap(q.get(1<<20)))
}

func TestBufferPoolConcurrent(t *testing.T) {
	var p bufferPool
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				b := p.get(minPooled + (g*200+i)%1000)
				b = append(b, byte(g))
				assert.Equal(t, byte(g), b[0], "no two requests share a buffer")
				p.put(b)
			}
		}()
	}
	wg.Wait()
	assert.LessOrEqual(t, p.bytes, pooledBytes)
}
