package faultproxy

import (
	"bytes"
	"strconv"
)

// respLen returns the length of the first complete RESP2/RESP3 value in b,
// -1 when b holds only part of one, or -2 when b is not RESP. A line that
// does not start with a RESP type byte counts as an inline command.
func respLen(b []byte) int {
	if len(b) == 0 {
		return -1
	}
	eol := bytes.Index(b, []byte("\r\n"))
	if eol < 0 {
		return -1
	}
	head := eol + 2
	switch b[0] {
	case '+', '-', ':', '_', ',', '#', '(':
		return head
	case '$', '!', '=':
		n, err := strconv.Atoi(string(b[1:eol]))
		if err != nil {
			return -2
		}
		if n < 0 {
			return head
		}
		if len(b) < head+n+2 {
			return -1
		}
		return head + n + 2
	case '*', '~', '>', '%', '|':
		n, err := strconv.Atoi(string(b[1:eol]))
		if err != nil {
			return -2
		}
		if b[0] == '%' || b[0] == '|' {
			n *= 2
		}
		off := head
		for range max(n, 0) {
			l := respLen(b[off:])
			if l < 0 {
				return l
			}
			off += l
		}
		return off
	}
	return head // an inline command
}
