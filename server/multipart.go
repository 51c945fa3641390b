package server

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// A $batch arrives whole in memory (readBody), so its multipart document is read in place:
// each part's header fields and body are slices of the request body, with no copy and no
// map per part. mime/multipart, which reads a stream, copied every part twice and built a
// header map for each; for a 100-operation batch that was most of the server's work. The
// reader below accepts what mime/multipart's NextRawPart accepts and reads it into the same
// parts (FuzzMultipartMatchesStdlib checks this), with two differences: it has no 4 KiB
// limit on the length of a line outside the parts, and it takes at most maxHeaderFields
// fields in a header block where mime/multipart takes 10,000 (SDKs send fewer than ten).

// mimeField is one header field; mimeHeader is a header block's fields in their order.
type mimeField struct{ name, value string }

type mimeHeader []mimeField

// Get returns the first value of the field named name, compared without regard to case.
func (h mimeHeader) Get(name string) string {
	for _, f := range h {
		if strings.EqualFold(f.name, name) {
			return f.value
		}
	}
	return ""
}

// Values returns every value of the field named name, in order.
func (h mimeHeader) Values(name string) []string {
	var vs []string
	for _, f := range h {
		if strings.EqualFold(f.name, name) {
			vs = append(vs, f.value)
		}
	}
	return vs
}

// maxHeaderFields bounds the fields of one header block, so that what a request's fields
// cost stays small: without it, 4 MiB of three-byte lines ("a:\n") would be over a million
// fields of 32 bytes each.
const maxHeaderFields = 1000

var errTooManyFields = fmt.Errorf("more than %d header fields", maxHeaderFields)

// readHeader reads header lines from the start of data up to the blank line that ends
// them, appending the fields to dst, as net/textproto's ReadMIMEHeader reads them: lines
// end in CRLF or LF, a line that starts with a space or tab continues the one before,
// names are tokens and values hold no control characters. It returns the fields, the bytes
// consumed (the blank line included) and, when data ends before the blank line, io.EOF
// with the fields read so far.
func readHeader(dst mimeHeader, data []byte) (mimeHeader, int, error) {
	// One string for the whole block, which the fields' names and values are slices of.
	end := headerEnd(data)
	text := string(data[:end])
	if text != "" && (text[0] == ' ' || text[0] == '\t') {
		line, _, _ := nextLine(text, 0)
		return dst, 0, fmt.Errorf("malformed MIME header initial line: %s", quoteStart(line))
	}
	first := len(dst)
	pos := 0
	for {
		line, next, ok := nextLine(text, pos)
		if !ok {
			return dst, pos, io.EOF
		}
		pos = next
		if line == "" {
			return dst, pos, nil
		}
		if strings.IndexByte(line, ':') < 0 {
			return dst, pos, fmt.Errorf("malformed MIME header: missing colon: %s", quoteStart(line))
		}
		kv := trimBlanks(line)
		if pos < len(text) && (text[pos] == ' ' || text[pos] == '\t') {
			folded := []byte(kv)
			for pos < len(text) && (text[pos] == ' ' || text[pos] == '\t') {
				for pos < len(text) && (text[pos] == ' ' || text[pos] == '\t') {
					pos++
				}
				folded = append(folded, ' ')
				cont, next, ok := nextLine(text, pos)
				if !ok {
					break
				}
				pos = next
				folded = append(folded, trimBlanks(cont)...)
			}
			kv = string(folded)
		}
		name, value, _ := strings.Cut(kv, ":")
		if !validFieldName(name) || !validFieldValue(value) {
			return dst, pos, fmt.Errorf("malformed MIME header line: %s", quoteStart(kv))
		}
		if len(dst)-first == maxHeaderFields {
			return dst, pos, errTooManyFields
		}
		dst = append(dst, mimeField{name: name, value: strings.TrimLeft(value, " \t")})
	}
}

// headerEnd is the length of data's header block: up to and including its blank line, or
// all of data when there is none.
func headerEnd(data []byte) int {
	if len(data) > 0 && data[0] == '\n' {
		return 1
	}
	if len(data) > 1 && data[0] == '\r' && data[1] == '\n' {
		return 2
	}
	for i := 0; ; {
		j := bytes.IndexByte(data[i:], '\n')
		if j < 0 {
			return len(data)
		}
		i += j + 1
		switch {
		case i < len(data) && data[i] == '\n':
			return i + 1
		case i+1 < len(data) && data[i] == '\r' && data[i+1] == '\n':
			return i + 2
		}
	}
}

// nextLine returns the line of text at pos without its LF or CRLF, and where the next
// begins; ok is false at the end of text.
func nextLine(text string, pos int) (line string, next int, ok bool) {
	if pos >= len(text) {
		return "", pos, false
	}
	i := strings.IndexByte(text[pos:], '\n')
	if i < 0 {
		return text[pos:], len(text), true
	}
	return strings.TrimSuffix(text[pos:pos+i], "\r"), pos + i + 1, true
}

// quoteStart quotes the start of a line for an error message, whose cost then does not grow
// with the line.
func quoteStart[T ~string | ~[]byte](line T) string {
	if len(line) > 80 {
		return strconv.Quote(string(line[:80])) + "…"
	}
	return strconv.Quote(string(line))
}

func trimBlanks(s string) string { return strings.Trim(s, " \t") }

// validFieldName says whether name is a token, or tokens separated by spaces, which
// net/textproto accepts as written (go.dev/issue/34540).
func validFieldName(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; !isTokenByte(c) && c != ' ' {
			return false
		}
	}
	return true
}

func isTokenByte(c byte) bool {
	if c >= 0x80 {
		return false
	}
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

// validFieldValue says whether a value holds no control character other than tab.
func validFieldValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < 0x20 && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}

// multipartReader reads the parts of a multipart document held in data (RFC 2046, section
// 5.1).
type multipartReader struct {
	data         []byte
	pos          int
	dashBoundary string // "--" and the boundary
	nl           string // the line end: CRLF, or LF when the first boundary line ends so
	partsRead    int
	fields       mimeHeader // the current part's header fields, reused for the next part
}

// rawPart is one part of a multipart document: its header fields, valid until the next part
// is read, and its body, a slice of the document.
type rawPart struct {
	header mimeHeader
	body   []byte
}

func newMultipartReader(data []byte, boundary string) *multipartReader {
	return &multipartReader{data: data, dashBoundary: "--" + boundary, nl: "\r\n"}
}

// next returns the next part, or io.EOF after the closing delimiter. Anything before the
// first delimiter is a preamble and skipped; between parts only a line end may stand.
func (r *multipartReader) next() (rawPart, error) {
	if r.dashBoundary == "--" {
		return rawPart{}, errors.New("multipart: boundary is empty")
	}
	expectNewPart := false
	for {
		rest := r.data[r.pos:]
		if len(rest) == 0 {
			return rawPart{}, errors.New("multipart: NextPart: EOF")
		}
		line := rest
		if i := bytes.IndexByte(rest, '\n'); i >= 0 {
			line = rest[:i+1]
		} else {
			if r.isFinalBoundary(line) {
				return rawPart{}, io.EOF
			}
			return rawPart{}, errors.New("multipart: NextPart: EOF")
		}
		r.pos += len(line)
		if r.isBoundaryDelimiterLine(line) {
			r.partsRead++
			return r.readPart()
		}
		if r.isFinalBoundary(line) {
			return rawPart{}, io.EOF
		}
		if expectNewPart {
			return rawPart{}, fmt.Errorf("multipart: expecting a new Part; got line %s", quoteStart(line))
		}
		if r.partsRead == 0 {
			continue // the preamble
		}
		if string(line) == r.nl {
			expectNewPart = true
			continue
		}
		return rawPart{}, fmt.Errorf("multipart: unexpected line in Next(): %s", quoteStart(line))
	}
}

// readPart reads a part's header and finds the end of its body, which is followed by the
// next delimiter.
func (r *multipartReader) readPart() (rawPart, error) {
	fields, n, err := readHeader(r.fields[:0], r.data[r.pos:])
	r.fields = fields
	if err != nil {
		return rawPart{}, err
	}
	r.pos += n
	body := r.data[r.pos:]
	end := r.bodyEnd(body)
	if end < 0 {
		return rawPart{}, io.ErrUnexpectedEOF
	}
	r.pos += end
	return rawPart{header: r.fields, body: body[:end:end]}, nil
}

// bodyEnd is the length of the body at the start of data: up to a line end followed by the
// delimiter, or the delimiter right at its start, where the delimiter is followed by
// white space, a line end, "--" or the end of data. It is -1 when there is none.
func (r *multipartReader) bodyEnd(data []byte) int {
	from := 0
	if bytes.HasPrefix(data, []byte(r.dashBoundary)) {
		if delimiterEnds(data[len(r.dashBoundary):]) {
			return 0
		}
		from = len(r.dashBoundary)
	}
	nlDash := r.nl + r.dashBoundary
	for {
		i := bytes.Index(data[from:], []byte(nlDash))
		if i < 0 {
			return -1
		}
		at := from + i
		if delimiterEnds(data[at+len(nlDash):]) {
			return at
		}
		from = at + len(nlDash)
	}
}

// delimiterEnds says whether what follows a delimiter's boundary ends the delimiter.
func delimiterEnds(after []byte) bool {
	if len(after) == 0 {
		return true
	}
	switch after[0] {
	case ' ', '\t', '\r', '\n':
		return true
	case '-':
		return len(after) > 1 && after[1] == '-'
	}
	return false
}

func (r *multipartReader) isFinalBoundary(line []byte) bool {
	rest, ok := bytes.CutPrefix(line, []byte(r.dashBoundary+"--"))
	if !ok {
		return false
	}
	rest = bytes.TrimLeft(rest, " \t")
	return len(rest) == 0 || string(rest) == r.nl
}

func (r *multipartReader) isBoundaryDelimiterLine(line []byte) bool {
	rest, ok := bytes.CutPrefix(line, []byte(r.dashBoundary))
	if !ok {
		return false
	}
	rest = bytes.TrimLeft(rest, " \t")
	if r.partsRead == 0 && len(rest) == 1 && rest[0] == '\n' {
		r.nl = "\n" // the document's lines end in LF alone
	}
	return string(rest) == r.nl
}
