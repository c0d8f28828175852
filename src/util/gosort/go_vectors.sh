#!/usr/bin/env bash
# Regenerates go_vectors.txt from Go's own sort package (not part of the build or the tests).
#
# Needs a Go toolchain with its sources (Go >= 1.19, where sort.Sort is pdqsort; Debian's
# golang-1.19-go is enough). The package is copied from $(go env GOROOT)/src/sort at run time
# and its pattern breaker given Go >= 1.24's xorshift shifts (13, 7, 17; golang/go#70144), so
# the vectors are what Go 1.26's sort.Sort — the Go Karmada builds with — does.
#
#   bash src/util/gosort/go_vectors.sh > src/util/gosort/go_vectors.txt
set -euo pipefail
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
src="$(go env GOROOT)/src/sort"
mkdir -p "$work/gosort" "$work/killer"
cd "$work"
{
  echo 'package gosort'
  echo 'import "math/bits"'
  sed -n '/^type Interface interface/,/^}/p' "$src/sort.go"
  sed -n '/^func Sort(data Interface)/,/^}/p' "$src/sort.go"
  sed -n '/^type sortedHint/,/^)/p' "$src/sort.go"
  echo 'type xorshift uint64'
  echo 'func (r *xorshift) Next() uint64 { *r ^= *r << 13; *r ^= *r >> 7; *r ^= *r << 17; return uint64(*r) }'
  echo 'func nextPowerOfTwo(length int) uint { return 1 << bits.Len(uint(length)) }'
} > gosort/sort.go
sed '1,/^package sort/{/^package sort/s/.*/package gosort/}' "$src/zsortinterface.go" > gosort/zsortinterface.go
printf 'module oracle\n\ngo 1.19\n' > go.mod

# Sorts lines "k1 k2 ..." with Less(i, j) = key[i] > key[j] (Karmada's TargetClustersList) and
# prints the input positions in the order Go leaves them.
cat > main.go <<'EOF'
package main

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"

	"oracle/gosort"
)

type item struct{ key, id int }
type desc []item

func (a desc) Len() int           { return len(a) }
func (a desc) Swap(i, j int)      { a[i], a[j] = a[j], a[i] }
func (a desc) Less(i, j int) bool { return a[i].key > a[j].key }

func main() {
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var a desc
		for i, s := range strings.Fields(sc.Text()) {
			k, _ := strconv.Atoi(s)
			a = append(a, item{k, i})
		}
		gosort.Sort(a)
		out := make([]string, len(a))
		for i, it := range a {
			out[i] = strconv.Itoa(it.id)
		}
		fmt.Println(strings.Join(out, " "))
	}
}
EOF

# McIlroy's adversary ("A Killer Adversary for Quicksort", 1999): values decided lazily so
# that the sort picks bad pivots; the decided values drive it into its heapsort fallback.
cat > killer/main.go <<'EOF'
package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"oracle/gosort"
)

type adv struct {
	val, ptr               []int
	gas, solid, candidate  int
}

func (a *adv) Len() int      { return len(a.ptr) }
func (a *adv) Swap(i, j int) { a.ptr[i], a.ptr[j] = a.ptr[j], a.ptr[i] }
func (a *adv) Less(i, j int) bool {
	x, y := a.ptr[i], a.ptr[j]
	if a.val[x] == a.gas && a.val[y] == a.gas {
		if x == a.candidate {
			a.val[x] = a.solid
		} else {
			a.val[y] = a.solid
		}
		a.solid++
	}
	if a.val[x] == a.gas {
		a.candidate = x
	} else if a.val[y] == a.gas {
		a.candidate = y
	}
	return a.val[x] > a.val[y] // descending, as the oracle's Less
}

func main() {
	n, _ := strconv.Atoi(os.Args[1])
	a := &adv{val: make([]int, n), ptr: make([]int, n), gas: 1 << 30}
	for i := range a.val {
		a.val[i], a.ptr[i] = a.gas, i
	}
	gosort.Sort(a)
	out := make([]string, n)
	for i, v := range a.val {
		out[i] = strconv.Itoa(v)
	}
	fmt.Println(strings.Join(out, " "))
}
EOF

python3 - > in.txt <<'EOF'
import random
random.seed(16)
cases = []
for n in [13, 14, 17, 20, 33, 49, 50, 51, 64, 100, 128, 200]:
    cases.append([7] * n)
    cases.append(list(range(n)))
    cases.append(list(range(n, 0, -1)))
    cases.append([min(i, n - i) for i in range(n)])
    cases.append([i % 5 for i in range(n)])
    for k in [2, 3, 5, 10, 1000]:
        cases.append([random.randrange(k) for _ in range(n)])
    s = sorted([random.randrange(10) for _ in range(n)], reverse=True)
    for _ in range(3):
        i, j = random.randrange(n), random.randrange(n)
        s[i], s[j] = s[j], s[i]
    cases.append(s)
    cases.append(sorted([random.randrange(4) for _ in range(n)]))
for t in range(40):
    n = random.randrange(13, 200)
    k = random.choice([2, 3, 4, 8, 30])
    cases.append([random.randrange(k) for _ in range(n)])
for keys in cases:
    print(*keys)
EOF
go build -o oracle . && go build -o adversary ./killer
for n in 64 200; do ./adversary "$n" >> in.txt; done
./oracle < in.txt > out.txt
cat <<'EOF'
# Go's sort.Sort on lists of integer keys with Less(i, j) = key[i] > key[j] (Karmada's
# TargetClustersList). Each case: a 'keys' line, then 'perm': the input positions in the order
# Go leaves them. Produced by go_vectors.sh beside this file: the standard library's sort
# package (here Go 1.19.8's, Debian's golang-1.19-src) with the xorshift shifts of Go >= 1.24
# (13, 7, 17; golang/go#70144), which is Go 1.26's sort.Sort. The last two inputs come from
# McIlroy's adversary and reach the heapsort fallback.
EOF
paste -d'\n' <(sed 's/^/keys /' in.txt) <(sed 's/^/perm /' out.txt)
