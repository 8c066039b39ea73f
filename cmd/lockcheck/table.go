package main

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// tableWidth is the widest line lockcheck's tables print without -wide:
// cells wrap at spaces (or, for a word too long, anywhere) to fit it.
const tableWidth = 100

// tableGap separates columns.
const tableGap = 2

// tableWidthFor is the table width for the -wide flag: 0, no limit.
func tableWidthFor(wide bool) int {
	if wide {
		return 0
	}
	return tableWidth
}

// writeTable prints rows (the first is the header) in aligned columns. With
// width > 0, the widest columns are narrowed until a line fits width, never
// below their header, and their cells wrap onto more lines.
func writeTable(w io.Writer, rows [][]string, width int) {
	if len(rows) == 0 {
		return
	}
	n := len(rows[0])
	widths := make([]int, n)
	floor := make([]int, n)
	for i, h := range rows[0] {
		floor[i] = max(utf8.RuneCountInString(h), 5)
	}
	for _, r := range rows {
		for i, c := range r {
			widths[i] = max(widths[i], utf8.RuneCountInString(c))
		}
	}
	if width > 0 {
		for total(widths) > width {
			widest := -1
			for i := range widths {
				if widths[i] > floor[i] && (widest < 0 || widths[i] > widths[widest]) {
					widest = i
				}
			}
			if widest < 0 {
				break // the headers alone are wider: nothing left to narrow
			}
			widths[widest]--
		}
	}
	for _, r := range rows {
		cells := make([][]string, n)
		height := 1
		for i := range n {
			c := ""
			if i < len(r) {
				c = r[i]
			}
			cells[i] = wrapCell(c, widths[i])
			height = max(height, len(cells[i]))
		}
		for l := range height {
			var b strings.Builder
			for i := range n {
				part := ""
				if l < len(cells[i]) {
					part = cells[i][l]
				}
				b.WriteString(part)
				if i < n-1 {
					b.WriteString(strings.Repeat(" ", widths[i]-utf8.RuneCountInString(part)+tableGap))
				}
			}
			fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
		}
	}
}

func total(widths []int) int {
	t := tableGap * (len(widths) - 1)
	for _, w := range widths {
		t += w
	}
	return t
}

// wrapCell splits s into lines of at most width runes, at spaces where it
// can.
func wrapCell(s string, width int) []string {
	if utf8.RuneCountInString(s) <= width {
		return []string{s}
	}
	var lines []string
	line := ""
	for _, word := range strings.Fields(s) {
		for utf8.RuneCountInString(word) > width {
			if line != "" {
				lines = append(lines, line)
				line = ""
			}
			cut := runeIndex(word, width)
			lines = append(lines, word[:cut])
			word = word[cut:]
		}
		switch {
		case word == "":
		case line == "":
			line = word
		case utf8.RuneCountInString(line)+1+utf8.RuneCountInString(word) <= width:
			line += " " + word
		default:
			lines = append(lines, line)
			line = word
		}
	}
	if line != "" {
		lines = append(lines, line)
	}
	return lines
}

// runeIndex is the byte offset of the n-th rune of s.
func runeIndex(s string, n int) int {
	i := 0
	for n > 0 && i < len(s) {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
		n--
	}
	return i
}
