package server

import (
	"bytes"
	"errors"
	"io"
	"mime/multipart"
	"net/textproto"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// stdPart is a part as mime/multipart reads it.
type stdPart struct {
	header textproto.MIMEHeader
	body   string
}

// readStd reads every part with mime/multipart, stopping at the first error.
func readStd(data []byte, boundary string) ([]stdPart, error) {
	mr := multipart.NewReader(bytes.NewReader(data), boundary)
	var parts []stdPart
	for {
		p, err := mr.NextRawPart()
		if err == io.EOF {
			return parts, nil
		}
		if err != nil {
			return parts, err
		}
		body, err := io.ReadAll(p)
		if err != nil {
			return parts, err
		}
		parts = append(parts, stdPart{p.Header, string(body)})
	}
}

// readInPlace reads every part with multipartReader, in the same form.
func readInPlace(data []byte, boundary string) ([]stdPart, error) {
	r := newMultipartReader(data, boundary)
	var parts []stdPart
	for {
		p, err := r.next()
		if err == io.EOF {
			return parts, nil
		}
		if err != nil {
			return parts, err
		}
		var h textproto.MIMEHeader
		for _, f := range p.header {
			if h == nil {
				h = textproto.MIMEHeader{}
			}
			h.Add(textproto.CanonicalMIMEHeaderKey(f.name), f.value)
		}
		if h == nil {
			h = textproto.MIMEHeader{}
		}
		parts = append(parts, stdPart{h, string(p.body)})
	}
}

func TestMultipartReader(t *testing.T) {
	for _, tc := range []struct {
		name, doc string
		parts     []string // each part's Content-Type and body, joined by "|"
		fails     bool
	}{
		{name: "CRLF", doc: "--B\r\nContent-Type: a\r\n\r\none\r\n--B\r\nContent-Type: b\r\n\r\ntwo\r\n--B--\r\n", parts: []string{"a|one", "b|two"}},
		{name: "LF alone", doc: "--B\nContent-Type: a\n\none\n--B--\n", parts: []string{"a|one"}},
		{name: "preamble and epilogue", doc: "ignored\r\n--B\r\n\r\nx\r\n--B--\r\nafter", parts: []string{"|x"}},
		{name: "transport padding", doc: "--B \t\r\nContent-Type: a\r\n\r\nx\r\n--B-- \r\n", parts: []string{"a|x"}},
		{name: "empty body", doc: "--B\r\nContent-Type: a\r\n\r\n--B--", parts: []string{"a|"}},
		{name: "boundary-like text in a body", doc: "--B\r\n\r\nx\r\n--Bx\r\n--B-\r\n--B--", parts: []string{"|x\r\n--Bx\r\n--B-"}},
		{name: "folded header", doc: "--B\r\nContent-Type: a\r\n  b\r\n\r\nx\r\n--B--\r\n", parts: []string{"a b|x"}},
		{name: "no closing delimiter", doc: "--B\r\n\r\nx", fails: true},
		{name: "header without colon", doc: "--B\r\nContent-Type a\r\n\r\nx\r\n--B--", fails: true},
		{name: "control character in a value", doc: "--B\r\nContent-Type: a\x01\r\n\r\nx\r\n--B--", fails: true},
		{name: "text between parts", doc: "--B\r\n\r\nx\r\n--B\r\n\r\ny\r\n--B-\r\n--B--", parts: []string{"|x", "|y\r\n--B-"}},
		{name: "no delimiter at all", doc: "nothing here", fails: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := readInPlace([]byte(tc.doc), "B")
			if tc.fails {
				assert.Error(t, err)
			} else {
				require.NoError(t, err)
				var texts []string
				for _, p := range got {
					texts = append(texts, p.header.Get("Content-Type")+"|"+p.body)
				}
				assert.Equal(t, tc.parts, texts)
			}
			// And as mime/multipart reads it.
			std, stdErr := readStd([]byte(tc.doc), "B")
			assert.Equal(t, stdErr != nil, err != nil, "mime/multipart: %v", stdErr)
			if err == nil {
				assert.Equal(t, std, got)
			}
		})
	}
}

func TestMultipartHeaderFieldsBounded(t *testing.T) {
	doc := "--B\r\n" + strings.Repeat("A: 1\r\n", maxHeaderFields+1) + "\r\nx\r\n--B--"
	_, err := newMultipartReader([]byte(doc), "B").next()
	assert.ErrorIs(t, err, errTooManyFields)
}

// FuzzMultipartMatchesStdlib checks that the in-place reader reads what mime/multipart
// reads: the same parts, and success where it succeeds. It may accept more only where
// mime/multipart's stream buffer or header count, which the in-place reader does not have,
// stops it.
func FuzzMultipartMatchesStdlib(f *testing.F) {
	for _, seed := range []string{
		"--batch_B\r\nContent-Type: multipart/mixed; boundary=changeset_C\r\n\r\n--changeset_C\r\nContent-Type: application/http\r\n\r\nPOST http://h/a/T HTTP/1.1\r\nAccept: application/json\r\n\r\n{}\r\n--changeset_C--\r\n\r\n--batch_B--\r\n",
		"--batch_B\nContent-Type: a\n\nbody\n--batch_B--",
		"pre\r\n--batch_B  \r\nX: 1\r\n  2\r\n\r\n\r\n--batch_B\r\n\r\n--batch_B--  \r\n",
	} {
		f.Add([]byte(seed), "batch_B")
	}
	f.Fuzz(func(t *testing.T, data []byte, boundary string) {
		if strings.ContainsAny(boundary, "\r\n") {
			return // not a boundary mime.ParseMediaType yields
		}
		std, stdErr := readStd(data, boundary)
		got, err := readInPlace(data, boundary)
		if errors.Is(err, errTooManyFields) {
			return
		}
		n := min(len(std), len(got))
		assert.Equal(t, std[:n], got[:n])
		if stdErr == nil {
			require.NoError(t, err, "mime/multipart reads %q", data)
			require.Equal(t, std, got)
		}
		if err == nil && stdErr != nil && !strings.Contains(stdErr.Error(), "buffer full") && !strings.Contains(stdErr.Error(), "too large") {
			t.Fatalf("accepted %q, which mime/multipart refuses: %v", data, stdErr)
		}
	})
}
