// Command groupcheck-go-consumer is a franz-go (kgo) group consumer for `groupcheck serve`
// (docs/serve.md): it joins a classic group, reports each assignment and revocation as one NDJSON
// line on stdout, commits one offset after its first assignment, and leaves the group after
// -seconds. Every wait is bounded by that duration.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func emit(event string, fields map[string]any) {
	line := map[string]any{"event": event}
	for k, v := range fields {
		line[k] = v
	}
	b, _ := json.Marshal(line)
	fmt.Println(string(b))
}

func partitions(m map[string][]int32) []string {
	out := []string{}
	for t, ps := range m {
		for _, p := range ps {
			out = append(out, fmt.Sprintf("%s:%d", t, p))
		}
	}
	sort.Strings(out)
	return out
}

func main() {
	brokers := flag.String("brokers", "127.0.0.1:9092", "bootstrap address")
	group := flag.String("group", "g", "group id")
	topic := flag.String("topic", "t", "topic to consume")
	seconds := flag.Float64("seconds", 20, "how long to stay in the group")
	commit := flag.Int64("commit", 5, "offset committed for partition 0 after the first assignment")
	flag.Parse()
	if *seconds <= 0 || *seconds > 600 {
		fmt.Fprintln(os.Stderr, "-seconds must be in (0, 600]")
		os.Exit(2)
	}
	deadline := time.Now().Add(time.Duration(*seconds * float64(time.Second)))
	ctx, cancel := context.WithDeadline(context.Background(), deadline.Add(10*time.Second))
	defer cancel()
	assigned := make(chan struct{}, 1)
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(*brokers),
		kgo.ClientID("franz-go"),
		kgo.ConsumerGroup(*group),
		kgo.ConsumeTopics(*topic),
		kgo.Balancers(kgo.RangeBalancer()),
		kgo.DisableAutoCommit(),
		kgo.SessionTimeout(6*time.Second),
		kgo.HeartbeatInterval(500*time.Millisecond),
		kgo.FetchMaxWait(500*time.Millisecond),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
			emit("assigned", map[string]any{"partitions": partitions(m)})
			select {
			case assigned <- struct{}{}:
			default:
			}
		}),
		kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
			emit("revoked", map[string]any{"partitions": partitions(m)})
		}),
	)
	if err != nil {
		fmt.Fprintln(os.Stderr, "client:", err)
		os.Exit(2)
	}
	committed := false
	for time.Now().Before(deadline) {
		pollCtx, pollCancel := context.WithTimeout(ctx, 200*time.Millisecond)
		cl.PollFetches(pollCtx)
		pollCancel()
		select {
		case <-assigned:
			if !committed {
				offsets := map[string]map[int32]kgo.EpochOffset{*topic: {0: {Epoch: -1, Offset: *commit}}}
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
				committed = commitErr == nil
				emit("committed", map[string]any{"ok": committed, "offset": *commit})
			}
		default:
		}
	}
	leaveErr := cl.LeaveGroupContext(ctx)
	emit("left", map[string]any{"ok": leaveErr == nil})
	cl.Close()
}
