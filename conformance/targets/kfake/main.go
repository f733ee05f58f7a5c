// Command groupcheck-kfake runs franz-go's kfake (an in-memory Kafka cluster) as a conformance
// target for groupcheck: one broker on a loopback port, optional seed topics, test-friendly group
// settings. It prints the broker address on stdout and serves until stdin closes (or, with
// -wait=signal, until SIGTERM/SIGINT).
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
)

const kfakeModule = "github.com/twmb/franz-go/pkg/kfake"

type topicsFlag map[string]int32

func (f topicsFlag) String() string { return "" }

func (f topicsFlag) Set(s string) error {
	name, parts, ok := strings.Cut(s, ":")
	n := int64(1)
	if ok {
		var err error
		if n, err = strconv.ParseInt(parts, 10, 32); err != nil || n < 1 {
			return fmt.Errorf("bad partition count in %q", s)
		}
	}
	if name == "" {
		return fmt.Errorf("empty topic name in %q", s)
	}
	f[name] = int32(n)
	return nil
}

type kvFlag map[string]string

func (f kvFlag) String() string { return "" }

func (f kvFlag) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok {
		return fmt.Errorf("expected key=value, got %q", s)
	}
	f[k] = v
	return nil
}

func moduleVersion() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	for _, dep := range info.Deps {
		if dep.Path == kfakeModule {
			return dep.Version
		}
	}
	return "unknown"
}

func main() {
	port := flag.Int("port", 0, "loopback port of the single broker (0: any free port)")
	minSession := flag.Duration("group-min-session-timeout", 500*time.Millisecond, "classic groups' minimum session timeout")
	maxSession := flag.Duration("group-max-session-timeout", 5*time.Minute, "classic groups' maximum session timeout")
	wait := flag.String("wait", "stdin", "serve until: stdin (closes) or signal (SIGTERM/SIGINT)")
	logLevel := flag.String("log-level", "warn", "none, error, warn, info, debug")
	showVersion := flag.Bool("version", false, "print the kfake module version and exit")
	topics := make(topicsFlag)
	flag.Var(topics, "topic", "seed topic NAME[:PARTITIONS] (repeatable)")
	bcfgs := make(kvFlag)
	flag.Var(bcfgs, "broker-config", "broker config key=value (repeatable)")
	flag.Parse()

	if *showVersion {
		fmt.Println(moduleVersion())
		return
	}

	level := map[string]kfake.LogLevel{
		"none": kfake.LogLevelNone, "error": kfake.LogLevelError, "warn": kfake.LogLevelWarn,
		"info": kfake.LogLevelInfo, "debug": kfake.LogLevelDebug,
	}[strings.ToLower(*logLevel)]

	opts := []kfake.Opt{
		kfake.NumBrokers(1),
		kfake.Ports(*port),
		kfake.ClusterID("groupcheck-kfake"),
		kfake.GroupMinSessionTimeout(*minSession),
		kfake.GroupMaxSessionTimeout(*maxSession),
		kfake.WithLogger(kfake.BasicLogger(os.Stderr, level)),
	}
	for name, parts := range topics {
		opts = append(opts, kfake.SeedTopics(parts, name))
	}
	if len(bcfgs) > 0 {
		opts = append(opts, kfake.BrokerConfigs(bcfgs))
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		fmt.Fprintf(os.Stderr, "groupcheck-kfake: cannot start the cluster: %v\n", err)
		os.Exit(1)
	}
	fmt.Println(strings.Join(c.ListenAddrs(), ","))

	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	done := make(chan struct{})
	if *wait == "stdin" {
		go func() {
			_, _ = io.Copy(io.Discard, bufio.NewReader(os.Stdin))
			close(done)
		}()
	}
	select {
	case <-sigs:
	case <-done:
	}
	c.Close()
}
