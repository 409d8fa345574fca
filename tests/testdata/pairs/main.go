// Command pairs times two command lines against each other, call by
// call, for scripts/call-pairs: it runs A and B alternately (A first in
// even pairs, B first in odd ones, so that neither always runs on the
// heels of the other), takes the ratio of each pair's wall times, and
// prints each round's median ratio, its median times, and the median of
// the rounds. A command line is its words; leading NAME=value words are
// added to its environment. Its output goes to /dev/null, so that no
// pipe or goroutine of this program is timed with it; a command that
// fails stops the run (run it by hand to see why).
//
//	pairs [-n PAIRS] [-r ROUNDS] 'A...' 'B...'
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"
)

func main() {
	pairs := flag.Int("n", 200, "pairs a round")
	rounds := flag.Int("r", 7, "rounds")
	flag.Parse()
	if flag.NArg() != 2 || *pairs < 1 || *rounds < 1 {
		fmt.Fprintln(os.Stderr, "usage: pairs [-n PAIRS] [-r ROUNDS] 'A...' 'B...'")
		os.Exit(2)
	}
	a, b := command(flag.Arg(0)), command(flag.Arg(1))
	var medians []float64
	for r := range *rounds {
		var ratios, ta, tb []float64
		for i := range *pairs {
			var da, db time.Duration
			if i%2 == 0 {
				da, db = a.time(), b.time()
			} else {
				db, da = b.time(), a.time()
			}
			ratios = append(ratios, float64(da)/float64(db))
			ta = append(ta, float64(da)/1e6)
			tb = append(tb, float64(db)/1e6)
		}
		m := median(ratios)
		medians = append(medians, m)
		fmt.Printf("round %d: A %.3f ms, B %.3f ms, A÷B %.3f\n", r+1, median(ta), median(tb), m)
	}
	fmt.Printf("A÷B median of %d rounds: %.3f (%.3f–%.3f)\n", *rounds, median(medians), slices.Min(medians), slices.Max(medians))
}

var devNull = func() *os.File {
	f, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		fmt.Fprintln(os.Stderr, "pairs:", err)
		os.Exit(1)
	}
	return f
}()

// cmdline is one command line to time.
type cmdline struct {
	args []string
	env  []string
}

func command(line string) cmdline {
	words := strings.Fields(line)
	env := os.Environ()
	for len(words) > 0 && strings.Contains(words[0], "=") {
		env = append(env, words[0])
		words = words[1:]
	}
	if len(words) == 0 {
		fmt.Fprintf(os.Stderr, "pairs: %q names no program\n", line)
		os.Exit(2)
	}
	return cmdline{args: words, env: env}
}

// time runs the command line once and returns its wall time, from the
// start of the process to its exit.
func (c cmdline) time() time.Duration {
	cmd := exec.Command(c.args[0], c.args[1:]...)
	cmd.Env = c.env
	cmd.Stdout, cmd.Stderr = devNull, devNull
	start := time.Now()
	err := cmd.Run()
	d := time.Since(start)
	if err != nil {
		fmt.Fprintf(os.Stderr, "pairs: %s: %v\n", strings.Join(c.args, " "), err)
		os.Exit(1)
	}
	return d
}

func median(x []float64) float64 {
	s := slices.Sorted(slices.Values(x))
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
