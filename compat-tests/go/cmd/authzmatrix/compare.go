package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strings"
)

// row is one line of a matrix output.
type row struct {
	api, caseName, acls, result string
}

func (r row) key() string { return r.api + "\t" + r.caseName }

func readRows(path string) ([]row, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var rows []row
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		fs := strings.SplitN(line, "\t", 4)
		if len(fs) != 4 {
			return nil, fmt.Errorf("%s: malformed line %q", path, line)
		}
		rows = append(rows, row{fs[0], fs[1], fs[2], fs[3]})
	}
	return rows, sc.Err()
}

// readKnown reads the known differences: api, case, reason, tab-separated;
// '#' starts a comment line.
func readKnown(path string) (map[string]string, error) {
	known := map[string]string{}
	if path == "" {
		return known, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fs := strings.SplitN(line, "\t", 3)
		if len(fs) != 3 || strings.TrimSpace(fs[2]) == "" {
			return nil, fmt.Errorf("%s: want api, case and a reason, tab-separated: %q", path, line)
		}
		known[fs[0]+"\t"+fs[1]] = fs[2]
	}
	return known, sc.Err()
}

// compareFiles prints every (api, case) whose result differs between the
// two outputs, or that only one has, and reports whether each is a known
// difference. A known difference that no longer differs is reported too,
// so the list does not outlive the bugs it names.
func compareFiles(w io.Writer, gregorPath, kafkaPath, knownPath string) (bool, error) {
	g, err := readRows(gregorPath)
	if err != nil {
		return false, err
	}
	k, err := readRows(kafkaPath)
	if err != nil {
		return false, err
	}
	known, err := readKnown(knownPath)
	if err != nil {
		return false, err
	}
	kafka := map[string]row{}
	for _, r := range k {
		kafka[r.key()] = r
	}
	seen := map[string]bool{}
	ok := true
	same, diff, knownDiff := 0, 0, 0
	report := func(key, gres, kres string) {
		api, cs, _ := strings.Cut(key, "\t")
		if reason, isKnown := known[key]; isKnown {
			knownDiff++
			fmt.Fprintf(w, "known  %s %s\n  gregor: %s\n  kafka:  %s\n  reason: %s\n", api, cs, gres, kres, reason)
			return
		}
		diff++
		ok = false
		fmt.Fprintf(w, "DIFF   %s %s\n  gregor: %s\n  kafka:  %s\n", api, cs, gres, kres)
	}
	for _, gr := range g {
		seen[gr.key()] = true
		kr, found := kafka[gr.key()]
		switch {
		case !found:
			report(gr.key(), gr.result, "(no row)")
		case kr.result != gr.result:
			report(gr.key(), gr.result, kr.result)
		default:
			same++
			if _, isKnown := known[gr.key()]; isKnown {
				ok = false
				fmt.Fprintf(w, "STALE  %s %s: listed as a known difference, but both answer %s\n", gr.api, gr.caseName, gr.result)
			}
		}
	}
	for _, kr := range k {
		if !seen[kr.key()] {
			report(kr.key(), "(no row)", kr.result)
		}
	}
	fmt.Fprintf(w, "authzmatrix: %d rows equal, %d known differences, %d unexpected differences\n", same, knownDiff, diff)
	return ok, nil
}
