// Command groupcheck-go-consumer is a franz-go (kgo) group consumer for `groupcheck serve`
// (docs/serve.md, docs/clients.md): it joins a group (classic, or KIP-848 with -protocol consumer),
// reports each assignment, revocation and loss as one NDJSON line on stdout, and leaves the group
// after -seconds. Without -stdin it commits -commit for partition 0 after its first assignment;
// with -stdin it reads commands instead (`commit OFFSET`: commit OFFSET for every partition it
// holds; `leave`) and leaves when stdin closes. Every wait is bounded by -seconds.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

var out sync.Mutex

func emit(event string, fields map[string]any) {
	line := map[string]any{"event": event}
	for k, v := range fields {
		line[k] = v
	}
	b, _ := json.Marshal(line)
	out.Lock()
	fmt.Println(string(b))
	out.Unlock()
}

func partitions(m map[string][]int32) []string {
	names := []string{}
	for t, ps := range m {
		for _, p := range ps {
			names = append(names, fmt.Sprintf("%s:%d", t, p))
		}
	}
	sort.Strings(names)
	return names
}

// holding is the set of partitions the client has told us it owns (assigned minus revoked/lost).
type holding struct {
	mu    sync.Mutex
	parts map[string]map[int32]bool
}

func (h *holding) change(m map[string][]int32, add bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for t, ps := range m {
		if h.parts[t] == nil {
			h.parts[t] = map[int32]bool{}
		}
		for _, p := range ps {
			if add {
				h.parts[t][p] = true
			} else {
				delete(h.parts[t], p)
			}
		}
	}
}

func (h *holding) offsets(offset int64) map[string]map[int32]kgo.EpochOffset {
	h.mu.Lock()
	defer h.mu.Unlock()
	all := map[string]map[int32]kgo.EpochOffset{}
	for t, ps := range h.parts {
		for p := range ps {
			if all[t] == nil {
				all[t] = map[int32]kgo.EpochOffset{}
			}
			all[t][p] = kgo.EpochOffset{Epoch: -1, Offset: offset}
		}
	}
	return all
}

func balancer(name string) kgo.GroupBalancer {
	switch name {
	case "roundrobin":
		return kgo.RoundRobinBalancer()
	case "sticky":
		return kgo.StickyBalancer()
	case "cooperative-sticky":
		return kgo.CooperativeStickyBalancer()
	}
	return kgo.RangeBalancer()
}

func commit(ctx context.Context, cl *kgo.Client, offsets map[string]map[int32]kgo.EpochOffset, offset int64) {
	names := []string{}
	for t, ps := range offsets {
		for p := range ps {
			names = append(names, fmt.Sprintf("%s:%d", t, p))
		}
	}
	sort.Strings(names)
	if len(offsets) == 0 {
		emit("committed", map[string]any{"ok": true, "offset": offset, "partitions": names})
		return
	}
	var commitErr error
	cl.CommitOffsetsSync(ctx, offsets, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, e error) {
		commitErr = e
		if e == nil && resp != nil {
			for _, t := range resp.Topics {
				for _, p := range t.Partitions {
					if p.ErrorCode != 0 {
						commitErr = fmt.Errorf("partition %d: error %d", p.Partition, p.ErrorCode)
					}
				}
			}
		}
	})
	fields := map[string]any{"ok": commitErr == nil, "offset": offset, "partitions": names}
	if commitErr != nil {
		fields["error"] = commitErr.Error()
	}
	emit("committed", fields)
}

func main() {
	brokers := flag.String("brokers", "127.0.0.1:9092", "bootstrap address")
	bootstrap := flag.String("bootstrap", "", "bootstrap address (overrides -brokers)")
	group := flag.String("group", "g", "group id")
	topic := flag.String("topic", "t", "topic to consume")
	clientID := flag.String("client-id", "franz-go", "client id")
	protocol := flag.String("protocol", "classic", "classic or consumer (KIP-848, kgo.ServerSideBalancer)")
	assignor := flag.String("assignor", "range", "range, roundrobin, sticky or cooperative-sticky")
	seconds := flag.Float64("seconds", 20, "how long to stay in the group at most")
	commitAt := flag.Int64("commit", 5, "without -stdin: offset committed for partition 0 after the first assignment")
	stdin := flag.Bool("stdin", false, "read commands from stdin")
	flag.Parse()
	if *bootstrap != "" {
		brokers = bootstrap
	}
	if *seconds <= 0 || *seconds > 600 || (*protocol != "classic" && *protocol != "consumer") {
		fmt.Fprintln(os.Stderr, "-seconds must be in (0, 600], -protocol classic or consumer")
		os.Exit(2)
	}
	deadline := time.Now().Add(time.Duration(*seconds * float64(time.Second)))
	ctx, cancel := context.WithDeadline(context.Background(), deadline.Add(10*time.Second))
	defer cancel()
	assigned := make(chan struct{}, 1)
	held := &holding{parts: map[string]map[int32]bool{}}
	opts := []kgo.Opt{
		kgo.SeedBrokers(*brokers),
		kgo.ClientID(*clientID),
		kgo.ConsumerGroup(*group),
		kgo.ConsumeTopics(*topic),
		kgo.Balancers(balancer(*assignor)),
		kgo.DisableAutoCommit(),
		kgo.SessionTimeout(6 * time.Second),
		kgo.HeartbeatInterval(500 * time.Millisecond),
		kgo.FetchMaxWait(500 * time.Millisecond),
		kgo.RequestTimeoutOverhead(5 * time.Second),
		kgo.RetryTimeout(10 * time.Second),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
			held.change(m, true)
			emit("assigned", map[string]any{"partitions": partitions(m)})
			select {
			case assigned <- struct{}{}:
			default:
			}
		}),
		kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
			held.change(m, false)
			emit("revoked", map[string]any{"partitions": partitions(m)})
		}),
		kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
			held.change(m, false)
			emit("lost", map[string]any{"partitions": partitions(m)})
		}),
	}
	if *protocol == "consumer" {
		opts = append(opts, kgo.ServerSideBalancer())
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		fmt.Fprintln(os.Stderr, "client:", err)
		os.Exit(2)
	}
	commands := make(chan string, 64)
	if *stdin {
		go func() {
			scanner := bufio.NewScanner(os.Stdin)
			for scanner.Scan() {
				commands <- strings.TrimSpace(scanner.Text())
			}
			commands <- "leave"
		}()
	}
	emit("ready", map[string]any{"library": "franz-go"})
	committed := false
loop:
	for time.Now().Before(deadline) {
		pollCtx, pollCancel := context.WithTimeout(ctx, 100*time.Millisecond)
		cl.PollFetches(pollCtx)
		pollCancel()
		select {
		case <-assigned:
			if !committed && !*stdin {
				offsets := map[string]map[int32]kgo.EpochOffset{*topic: {0: {Epoch: -1, Offset: *commitAt}}}
				commit(ctx, cl, offsets, *commitAt)
				committed = true
			}
		case command := <-commands:
			if command == "leave" {
				break loop
			}
			if rest, ok := strings.CutPrefix(command, "commit "); ok {
				if offset, err := strconv.ParseInt(rest, 10, 64); err == nil {
					commitCtx, commitCancel := context.WithTimeout(ctx, 10*time.Second)
					commit(commitCtx, cl, held.offsets(offset), offset)
					commitCancel()
				}
			}
		default:
		}
	}
	leaveCtx, leaveCancel := context.WithTimeout(ctx, 10*time.Second)
	leaveErr := cl.LeaveGroupContext(leaveCtx)
	leaveCancel()
	emit("left", map[string]any{"ok": leaveErr == nil})
	cl.Close()
}
