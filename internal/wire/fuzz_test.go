package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tabuladb/tabula/odata"
)

// The decoders against arbitrary input: none may panic, what one accepts the writers write
// back so that it reads the same, and a refusal always says why in the service's terms.

func FuzzDecodeEntity(f *testing.F) {
	for _, seed := range []string{
		`{"PartitionKey":"p","RowKey":"r"}`,
		`{"PartitionKey":"p","RowKey":"r","A":1,"A":2}`,
		`{"PartitionKey":"p","RowKey":"r","N@odata.type":"Edm.Int64","N":"-9223372036854775808"}`,
		`{"PartitionKey":"p","RowKey":"r","D@odata.type":"Edm.Double","D":"-Infinity","Z":-0.0,"E":1E-320}`,
		`{"PartitionKey":"p","RowKey":"r","T@odata.type":"Edm.DateTime","T":"9999-12-31T23:59:59.9999999Z"}`,
		`{"PartitionKey":"p","RowKey":"r","S":"\ud83d\ude00\u0000\\\"\/"}`,
		`{"PartitionKey":"","RowKey":"","odata.etag":"x","Timestamp":null}`,
		` { "PartitionKey" : "p" , "RowKey" : "r" , "b" : false } `,
		`{"RowKey@odata.type":"Edm.String","RowKey":"r","PartitionKey":"p","G@odata.type":"Edm.Guid","G":"00000000-0000-0000-0000-000000000000"}`,
		`{"odata.metadata":"http://h/a/$metadata#T/@Element","odata.etag":"W/\"datetime'2024-01-01T00%3A00%3A00Z'\"",` +
			`"PartitionKey":"p","RowKey":"r","Timestamp":"2024-01-01T00:00:00Z","B@odata.type":"Edm.Binary","B":"AQID","I":5,"F":5.0}`,
		`{"PartitionKey":"p","RowKey":"r","X@odata.type":"Edm.Unknown","X":1}`,
		`{"PartitionKey":"p","RowKey":"r","X":{"nested":1}}`,
		`{"PartitionKey":"p"}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		members, perr := ParseObject(data)
		if perr == nil && !json.Valid(data) {
			t.Fatalf("ParseObject read %q, which is not JSON", data)
		}
		if perr == nil && len(members) == 0 && !bytes.Contains(data, []byte("{}")) && !bytes.Contains(data, []byte("}")) {
			t.Fatalf("ParseObject read %q as an empty object", data)
		}
		for _, keys := range []Keys{KeysFromBody, KeysFromURL, KeysFromResponse} {
			e, err := DecodeEntity(data, keys)
			if err != nil {
				var de *DecodeError
				if !errors.As(err, &de) || de.Reason < InvalidInput || de.Reason > MissingKeys || de.Detail == "" {
					t.Fatalf("DecodeEntity(%q) refused it with %#v", data, err)
				}
				if perr != nil && de.Reason != InvalidInput {
					t.Fatalf("DecodeEntity(%q) refused JSON ParseObject refuses as %v", data, de.Reason)
				}
				continue
			}
			if perr != nil {
				t.Fatalf("DecodeEntity(%q) read what ParseObject refuses: %v", data, perr)
			}
			if slices.ContainsFunc(e.Properties, func(p Property) bool { return p.Name == "" }) {
				// The engine refuses an empty name (PropertyNameInvalid), so no entity
				// written has one; its annotation would read as a property "@odata.type".
				continue
			}
			// What is read is written back the same, by a client and at every level.
			for _, doubles := range []bool{false, true} {
				body := AppendBody(nil, &e, doubles)
				again, err := DecodeEntity(body, KeysFromBody)
				if err != nil {
					t.Fatalf("AppendBody of %q = %s, which does not read back: %v", data, body, err)
				}
				if keys != KeysFromURL && (again.PartitionKey != e.PartitionKey || again.RowKey != e.RowKey) {
					t.Fatalf("keys of %q: %q %q, then %q %q", data, e.PartitionKey, e.RowKey, again.PartitionKey, again.RowKey)
				}
				sameProperties(t, data, e.Properties, again.Properties)
			}
			for _, level := range []Level{MinimalMetadata, FullMetadata} {
				w := Writer{Level: level, Base: "http://h/a", Account: "a", Table: "T"}
				body := w.AppendEntity(nil, &e, true)
				again, err := DecodeEntity(body, KeysFromResponse)
				if err != nil {
					t.Fatalf("level %d of %q = %s, which does not read back: %v", level, data, body, err)
				}
				sameProperties(t, data, e.Properties, again.Properties)
				if again.ETag != e.ETag || !again.Timestamp.Equal(e.Timestamp.Truncate(100)) && !e.Timestamp.Before(time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)) {
					t.Fatalf("level %d of %q = %s: ETag %q Timestamp %v, then %q %v", level, data, body, e.ETag, e.Timestamp, again.ETag, again.Timestamp)
				}
			}
		}
	})
}

// sameProperties fails t unless b holds a's properties, Doubles bit for bit.
func sameProperties(t *testing.T, data []byte, a, b []Property) {
	t.Helper()
	byName := func(x, y Property) int { return strings.Compare(x.Name, y.Name) }
	a, b = slices.SortedFunc(slices.Values(a), byName), slices.SortedFunc(slices.Values(b), byName)
	if len(a) != len(b) {
		t.Fatalf("properties of %q: %v, then %v", data, a, b)
	}
	for i := range a {
		va, vb := a[i].Value, b[i].Value
		same := a[i].Name == b[i].Name && va.Type == vb.Type
		switch va.Type {
		case odata.Double:
			same = same && math.Float64bits(va.Float) == math.Float64bits(vb.Float)
		case odata.Binary:
			same = same && bytes.Equal(va.Bytes, vb.Bytes)
		default:
			same = same && va.Str == vb.Str && va.Int == vb.Int && va.Guid == vb.Guid
		}
		if !same {
			t.Fatalf("property %d of %q: %+v, then %+v", i, data, a[i], b[i])
		}
	}
}

func FuzzParseDateTime(f *testing.F) {
	for _, seed := range []string{
		"2024-01-01T00:00:00Z", "9999-12-31T23:59:59.9999999Z", "0001-01-01T00:00:00+01:00", "2024-02-29T12:00:00.123456789-05:30",
		"2023-02-29T00:00:00Z", "2024-01-01T00:00:00", "2024-01-01T0:00:00Z", "2024-01-01T00:00:00,5Z", "0000-01-01T00:00:00Z",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tm, err := ParseDateTime(s)
		if err != nil {
			return
		}
		// Anything read is a time time.Parse reads the same (with its UTC offset spelled out).
		layout := "2006-01-02T15:04:05.999999999"
		if strings.HasSuffix(s, "Z") {
			layout += "Z07:00"
		} else if len(s) > 6 && (s[len(s)-6] == '+' || s[len(s)-6] == '-') {
			layout += "-07:00"
		}
		want, err := time.Parse(layout, s)
		if err != nil || !want.Equal(tm) {
			t.Fatalf("ParseDateTime(%q) = %v; time.Parse: %v, %v", s, tm, want, err)
		}
		// In the service's range, the text written for it reads back at 100 ns.
		ticks := odata.TicksFromTime(tm)
		if ticks < 0 || ticks > odata.MaxTicks {
			return
		}
		text := string(AppendTime(nil, ticks))
		back, err := ParseDateTime(text)
		if err != nil || odata.TicksFromTime(back) != ticks {
			t.Fatalf("ParseDateTime(%q) = %v, written %s, read back %v, %v", s, tm, text, back, err)
		}
	})
}

func FuzzDecodeToken(f *testing.F) {
	for _, seed := range []string{"1!12!Y29udFRva2Vu", "1!4!MQ--", "1!0!", "1!5!MQ--", "nonsense", "1!4!M***", "1!-1!", "1!04!MQ--"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, token string) {
		if key, err := DecodeToken(token); err == nil {
			// Any key a token holds is written back as a token holding it.
			if again, err := DecodeToken(EncodeToken(key)); err != nil || again != key {
				t.Fatalf("DecodeToken(%q) = %q, whose token reads %q, %v", token, key, again, err)
			}
		}
		// Any string is written as a token that reads back to it.
		if key, err := DecodeToken(EncodeToken(token)); err != nil || key != token {
			t.Fatalf("EncodeToken(%q) reads back %q, %v", token, key, err)
		}
	})
}

func FuzzETagTime(f *testing.F) {
	for _, seed := range []string{
		`W/"datetime'2022-03-01T20%3A40%3A24.4317535Z'"`, `W/"datetime'2022-03-01T20:40:24Z'"`, `W/"datetime'nope'"`,
		`W/"datetime'%zz'"`, `"x"`, `W/"wrong"`, `*`, ``,
	} {
		f.Add(seed, int64(0))
	}
	f.Add("", int64(odata.MaxTicks))
	f.Fuzz(func(t *testing.T, etag string, ticks int64) {
		read, wellFormed, ok := ETagTicks(etag)
		if ok && !wellFormed {
			t.Fatalf("ETagTicks(%q) holds a time but is not well formed", etag)
		}
		if ok && read >= 0 && read <= odata.MaxTicks {
			// The time read is the one its own ETag holds.
			if again, _, _ := ETagTicks(string(AppendETag(nil, read))); again != read {
				t.Fatalf("ETagTicks(%q) = %d, whose ETag reads %d", etag, read, again)
			}
		}
		// The ETag of every Timestamp in the service's range is an entity tag holding it.
		if ticks < 0 || ticks > odata.MaxTicks {
			return
		}
		written := string(AppendETag(nil, ticks))
		got, wellFormed, ok := ETagTicks(written)
		if !ok || !wellFormed || got != ticks || !IsEntityTag(written) {
			t.Fatalf("AppendETag(%d) = %s, read back %d %v %v", ticks, written, got, wellFormed, ok)
		}
	})
}

// FuzzKeyPredicate checks the fast path of AppendKeyPredicate against KeyPredicate, and the
// string writers against each other and against encoding/json.
func FuzzKeyPredicate(f *testing.F) {
	for _, seed := range [][2]string{{"p", "r"}, {"a'b", "x,y)"}, {"", ""}, {"%2F", "''"}, {"PartitionKey='x'", ")("}, {"\x00\xff", "😀"}} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, pk, rk string) {
		if got := string(AppendKeyPredicate([]byte("x"), pk, rk)); got != "x"+KeyPredicate(pk, rk) {
			t.Fatalf("AppendKeyPredicate(%q, %q) = %q, not x%s", pk, rk, got, KeyPredicate(pk, rk))
		}
		for _, s := range []string{pk, rk} {
			b := AppendString(nil, s)
			if StringSize(s) != len(b) {
				t.Fatalf("StringSize(%q) = %d, but AppendString writes %s", s, StringSize(s), b)
			}
			var back string
			// encoding/json reads each byte that is not UTF-8 as U+FFFD, as []rune does.
			if err := json.Unmarshal(b, &back); err != nil || string([]rune(s)) != back {
				t.Fatalf("AppendString(%q) = %s, which encoding/json reads as %q, %v", s, b, back, err)
			}
		}
	})
}
