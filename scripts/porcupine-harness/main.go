// Checks history files with Porcupine, for scripts/porcupine-side-by-side.sh: Jepsen etcd logs
// (.log: a failed cas is a compare that failed, :info is open to the end, a failed read or write
// did not happen, as Jepsen defines :fail and as coordsim reads it) and Porcupine's kv EDN files
// (.txt, get/put/append, with a model of the same shape as Porcupine's own test model: one
// string per key, hashed). Prints one line per file:
// "<file>\t<ops>\t<Ok|Illegal|Unknown>\t<seconds>". Written for coordsim; Porcupine is fetched
// into a scratch folder by the script, never committed.
package main

import (
	"bufio"
	"fmt"
	"hash/fnv"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
)

type regInput struct {
	op   int // 0 read, 1 write, 2 cas
	a, b int
}

type regOutput struct {
	ok      bool
	exists  bool
	value   int
	unknown bool
}

const nilValue = -1 << 40

var registerModel = porcupine.Model{
	Init: func() interface{} { return nilValue },
	Step: func(state, input, output interface{}) (bool, interface{}) {
		st := state.(int)
		in := input.(regInput)
		out := output.(regOutput)
		switch in.op {
		case 0:
			return out.unknown || (!out.exists && st == nilValue) || (out.exists && st == out.value), st
		case 1:
			return true, in.a
		default:
			next := st
			if in.a == st {
				next = in.b
			}
			return out.unknown || (in.a == st) == out.ok, next
		}
	},
	Hash: func(state interface{}) uint64 { return uint64(state.(int)) },
}

type kvInput struct {
	op    int // 0 get, 1 put, 2 append
	key   string
	value string
}

// Only PartitionEvent is needed: the harness checks events (CheckEventsTimeout).
var kvModel = porcupine.Model{
	PartitionEvent: func(history []porcupine.Event) [][]porcupine.Event {
		byKey := map[string][]porcupine.Event{}
		keyOf := map[int]string{}
		for _, ev := range history {
			if ev.Kind == porcupine.CallEvent {
				keyOf[ev.Id] = ev.Value.(kvInput).key
			}
			key := keyOf[ev.Id]
			byKey[key] = append(byKey[key], ev)
		}
		keys := make([]string, 0, len(byKey))
		for key := range byKey {
			keys = append(keys, key)
		}
		sort.Strings(keys)
		parts := make([][]porcupine.Event, 0, len(keys))
		for _, key := range keys {
			parts = append(parts, byKey[key])
		}
		return parts
	},
	Init: func() interface{} { return "" },
	Step: func(state, input, output interface{}) (bool, interface{}) {
		st := state.(string)
		in := input.(kvInput)
		switch in.op {
		case 0:
			out, known := output.(string)
			return !known || out == st, st
		case 1:
			return true, in.value
		default:
			return true, st + in.value
		}
	},
	// As Porcupine's own kv test model does: without a hash its cache compares every state, and
	// c50-ok took 36 s where it takes about 1 s (issue 39).
	Hash: func(state interface{}) uint64 {
		h := fnv.New64a()
		h.Write([]byte(state.(string)))
		return h.Sum64()
	},
}

func fields(line string) []string { return strings.Fields(line) }

// readLog parses a Jepsen etcd log; ops still open at the end (and :info) return last, unknown;
// a failed read or write is dropped: it did not happen (Jepsen's :fail). Porcupine's own
// parseJepsenLog reads only `:fail :read :timed-out` (as unknown, which constrains nothing) and
// skips other :fail lines, which would leave a failed write open to the end.
func readLog(path string) ([]porcupine.Event, int) {
	file, err := os.Open(path)
	if err != nil {
		panic(err)
	}
	defer file.Close()
	var events []porcupine.Event
	open := map[int]int{}
	dropped := map[int]bool{}
	id := 0
	scanner := bufio.NewScanner(file)
	scanner.Buffer(make([]byte, 1<<20), 1<<26)
	for scanner.Scan() {
		f := fields(scanner.Text())
		if len(f) < 7 {
			continue
		}
		proc, _ := strconv.Atoi(f[3])
		kind, fn, value := f[4], f[5], strings.Join(f[6:], " ")
		switch kind {
		case ":invoke":
			var in regInput
			switch fn {
			case ":read":
				in = regInput{op: 0}
			case ":write":
				v, _ := strconv.Atoi(value)
				in = regInput{op: 1, a: v}
			case ":cas":
				var a, b int
				fmt.Sscanf(value, "[%d %d]", &a, &b)
				in = regInput{op: 2, a: a, b: b}
			}
			events = append(events, porcupine.Event{ClientId: proc, Kind: porcupine.CallEvent, Value: in, Id: id})
			open[proc] = id
			id++
		case ":ok", ":fail":
			match, found := open[proc]
			if !found {
				continue
			}
			var out regOutput
			switch {
			case fn == ":read" && kind == ":ok":
				if value == "nil" {
					out = regOutput{}
				} else {
					v, _ := strconv.Atoi(value)
					out = regOutput{exists: true, value: v}
				}
			case fn == ":cas":
				out = regOutput{ok: kind == ":ok"}
			case kind == ":fail":
				delete(open, proc)
				dropped[match] = true
				continue
			}
			delete(open, proc)
			events = append(events, porcupine.Event{ClientId: proc, Kind: porcupine.ReturnEvent, Value: out, Id: match})
		}
	}
	for proc, match := range open {
		events = append(events, porcupine.Event{ClientId: proc, Kind: porcupine.ReturnEvent, Value: regOutput{unknown: true}, Id: match})
	}
	if len(dropped) > 0 {
		kept := events[:0]
		for _, ev := range events {
			if !dropped[ev.Id] {
				kept = append(kept, ev)
			}
		}
		events = kept
	}
	return events, id - len(dropped)
}

var kvLine = regexp.MustCompile(`:process (\d+), :type :(\w+), :f :(\w+), :key "([^"]*)", :value (nil|"[^"]*")`)

func readKv(path string) ([]porcupine.Event, int) {
	file, err := os.Open(path)
	if err != nil {
		panic(err)
	}
	defer file.Close()
	var events []porcupine.Event
	open := map[int]int{}
	id := 0
	scanner := bufio.NewScanner(file)
	for scanner.Scan() {
		m := kvLine.FindStringSubmatch(scanner.Text())
		if m == nil {
			continue
		}
		proc, _ := strconv.Atoi(m[1])
		value := strings.Trim(m[5], `"`)
		if m[2] == "invoke" {
			op := map[string]int{"get": 0, "put": 1, "append": 2}[m[3]]
			events = append(events, porcupine.Event{ClientId: proc, Kind: porcupine.CallEvent, Value: kvInput{op, m[4], value}, Id: id})
			open[proc] = id
			id++
		} else if match, found := open[proc]; found && m[2] == "ok" {
			delete(open, proc)
			var out interface{} = value
			if m[3] != "get" {
				out = nil
			}
			events = append(events, porcupine.Event{ClientId: proc, Kind: porcupine.ReturnEvent, Value: out, Id: match})
		}
	}
	for proc, match := range open {
		events = append(events, porcupine.Event{ClientId: proc, Kind: porcupine.ReturnEvent, Value: nil, Id: match})
	}
	return events, id
}

func main() {
	timeout := 60 * time.Second
	if seconds, err := strconv.Atoi(os.Getenv("TIMEOUT")); err == nil {
		timeout = time.Duration(seconds) * time.Second
	}
	for _, path := range os.Args[1:] {
		var events []porcupine.Event
		var ops int
		model := registerModel
		if strings.HasSuffix(path, ".txt") {
			events, ops = readKv(path)
			model = kvModel
		} else {
			events, ops = readLog(path)
		}
		started := time.Now()
		result := porcupine.CheckEventsTimeout(model, events, timeout)
		fmt.Printf("%s\t%d\t%s\t%.3f\n", path, ops, result, time.Since(started).Seconds())
	}
}
