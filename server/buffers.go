package server

import "sync"

// bufferPool keeps the large buffers a $batch body and a big response are built in, so that
// each request does not allocate (and the runtime zero) up to megabytes anew: for a
// 100-operation batch that was a tenth of the server's work. It is bounded in bytes and in
// buffers; what does not fit is left to the garbage collector.
type bufferPool struct {
	mu    sync.Mutex
	free  [][]byte
	bytes int
}

const (
	// pooledBuffers and pooledBytes bound what a pool keeps: a few requests' worth.
	pooledBuffers = 8
	pooledBytes   = 16 << 20
	// minPooled is the smallest buffer worth keeping; smaller ones are cheap to allocate.
	minPooled = 32 << 10
)

// get returns an empty buffer with room for at least n bytes.
func (p *bufferPool) get(n int) []byte {
	if n >= minPooled {
		p.mu.Lock()
		best := -1
		for i, b := range p.free {
			if cap(b) >= n && (best < 0 || cap(b) < cap(p.free[best])) {
				best = i
			}
		}
		if best >= 0 {
			b := p.free[best]
			p.free[best] = p.free[len(p.free)-1]
			p.free = p.free[:len(p.free)-1]
			p.bytes -= cap(b)
			p.mu.Unlock()
			return b[:0]
		}
		p.mu.Unlock()
	}
	return make([]byte, 0, n)
}

// put gives b back for another request to use. Nothing may hold any part of b afterwards.
func (p *bufferPool) put(b []byte) {
	if cap(b) < minPooled || cap(b) > pooledBytes/2 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.free) == pooledBuffers {
		// Keep the larger: a request that needed a large buffer is likely to come again,
		// and small ones are cheaper to make.
		small := 0
		for i, f := range p.free {
			if cap(f) < cap(p.free[small]) {
				small = i
			}
		}
		if cap(p.free[small]) >= cap(b) {
			return
		}
		p.bytes -= cap(p.free[small])
		p.free[small] = p.free[len(p.free)-1]
		p.free = p.free[:len(p.free)-1]
	}
	if p.bytes+cap(b) > pooledBytes {
		return
	}
	p.free = append(p.free, b[:0])
	p.bytes += cap(b)
}
