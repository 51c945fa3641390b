package server

import (
	"io"
	"strconv"

	"github.com/tabuladb/tabula"
)

// MaxRequestBody is the most bytes a request body may have; larger bodies get 413
// RequestBodyTooLarge, as on the service (REST docs: "Understanding the Table service data model").
const MaxRequestBody = 4 << 20

// presizedBody is the most readBody allocates for a body before reading it.
const presizedBody = 256 << 10

// readBody reads the request body, refusing more than MaxRequestBody bytes.
func (c *call) readBody() ([]byte, *tabula.Error) { return c.readBodyInto(nil) }

// readBodyInto is readBody into buf, an empty buffer, when it has room: a pooled one.
func (c *call) readBodyInto(buf []byte) ([]byte, *tabula.Error) {
	if c.r.ContentLength > MaxRequestBody {
		return nil, withDetail(tabula.ErrRequestBodyTooLarge, "Content-Length "+strconv.FormatInt(c.r.ContentLength, 10)+" exceeds 4 MiB")
	}
	if c.r.Body == nil {
		return nil, nil
	}
	var data []byte
	var err error
	if n := c.r.ContentLength; n >= 0 {
		// Sized from Content-Length, one byte more to see the end without growing; but no
		// more than presizedBody before the bytes arrive, so that a client declaring 4 MiB
		// and sending nothing does not hold 4 MiB of the server's memory.
		if size := int(min(n+1, presizedBody)); cap(buf) < size {
			buf = make([]byte, 0, size)
		}
		data, err = appendFrom(io.LimitReader(c.r.Body, MaxRequestBody+1), buf)
	} else {
		data, err = io.ReadAll(io.LimitReader(c.r.Body, MaxRequestBody+1))
	}
	if err != nil {
		return nil, invalidInput("", "reading the request body: "+err.Error())
	}
	if len(data) > MaxRequestBody {
		return nil, withDetail(tabula.ErrRequestBodyTooLarge, "the body exceeds 4 MiB")
	}
	return data, nil
}

// appendFrom appends everything r holds to buf, whose capacity is expected to hold it all.
func appendFrom(r io.Reader, buf []byte) ([]byte, error) {
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}
