//go:build unix

package fence_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-co-op/gocron/v2"

	"github.com/lockplugin/lockplugin/integrations/gocronlock"
	"github.com/lockplugin/lockplugin/lease"
	"github.com/lockplugin/lockplugin/lease/redisstore"
	"github.com/lockplugin/lockplugin/tests/internal/testdb"
)

const (
	cronJobEnv    = "I16_GOCRON_JOB"
	cronHoldEnv   = "I16_GOCRON_HOLD_MS"
	cronSkewEnv   = "I16_GOCRON_SKEW_MS"
	cronPrefixEnv = "I16_GOCRON_PREFIX"
	cronProcEnv   = "I16_GOCRON_PROC"
)

// runRow is one run of the job: its occurrence (the unix second it was
// scheduled for) and the scheduler that ran it.
type runRow struct {
	ID   uint `gorm:"primaryKey"`
	Job  string
	Occ  int64
	Proc string
}

func (runRow) TableName() string { return "i16_runs" }

// skewLocker delays each lock by a fixed skew: this scheduler's timer
// fires that much later than the first one's, as on a node whose clock or
// scheduler lags.
type skewLocker struct {
	gocron.Locker
	skew time.Duration
}

func (s skewLocker) Lock(ctx context.Context, key string) (gocron.Lock, error) {
	time.Sleep(s.skew)
	return s.Locker.Lock(ctx, key)
}

// TestI16GocronHelper is not a test: TestI16Gocron runs the test binary
// again with only this function and the environment set; it runs one
// gocron scheduler until its stdin closes.
func TestI16GocronHelper(t *testing.T) {
	job := os.Getenv(cronJobEnv)
	if job == "" {
		t.Skip("helper process for TestI16Gocron")
	}
	hold, _ := strconv.Atoi(os.Getenv(cronHoldEnv))
	skewMS, _ := strconv.Atoi(os.Getenv(cronSkewEnv))
	skew := time.Duration(skewMS) * time.Millisecond
	proc := os.Getenv(cronProcEnv)
	tg := testdb.Get(t, testdb.Postgres)
	store := redisstore.New(testdb.Redis(t), redisstore.Prefix(os.Getenv(cronPrefixEnv)))
	locker := gocronlock.NewLocker(lease.NewManager(store), gocronlock.TTL(10*time.Second),
		gocronlock.HoldAtLeast(time.Duration(hold)*time.Millisecond))
	s, err := gocron.NewScheduler(gocron.WithDistributedLocker(skewLocker{locker, skew}))
	if err != nil {
		fmt.Println("i16-cron: error", err)
		os.Exit(2)
	}
	_, err = s.NewJob(gocron.CronJob("* * * * * *", true), gocron.NewTask(func() {
		occ := time.Now().Add(-skew).Unix()
		time.Sleep(100 * time.Millisecond) // a fast job
		tg.DB.Create(&runRow{Job: job, Occ: occ, Proc: proc})
	}), gocron.WithName(job))
	if err != nil {
		fmt.Println("i16-cron: error", err)
		os.Exit(2)
	}
	s.Start()
	fmt.Println("i16-cron: started")
	_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
	_ = s.Shutdown()
	os.Exit(0)
}

// TestI16Gocron: 3 gocron schedulers in separate processes run a 100 ms
// job every second on the Redis store, their timers 0, 150 and 300 ms
// apart. Without HoldAtLeast (the baseline) the first node's lock is
// released before the others' timers fire, and they run the occurrence
// again; with HoldAtLeast(700ms) (above the spread, below the interval) each
// occurrence runs exactly once.
func TestI16Gocron(t *testing.T) {
	tg := testdb.Get(t, testdb.Postgres)
	testdb.Redis(t) // fails under CI when Redis is missing
	tg.Reset(t, &runRow{})
	for _, hold := range []int{0, 700} {
		t.Run(fmt.Sprintf("hold=%dms", hold), func(t *testing.T) {
			job := testdb.Unique(t, "i16_job")
			var procs []*exec.Cmd
			var stdins []interface{ Close() error }
			for i := range 3 {
				cmd := exec.Command(os.Args[0], "-test.run=^TestI16GocronHelper$", "-test.count=1")
				cmd.Env = append(os.Environ(), cronJobEnv+"="+job, cronHoldEnv+"="+strconv.Itoa(hold),
					cronSkewEnv+"="+strconv.Itoa(150*i), cronPrefixEnv+"="+redisPrefix, cronProcEnv+"=p"+strconv.Itoa(i))
				out, err := cmd.StdoutPipe()
				noErr(t, err)
				in, err := cmd.StdinPipe()
				noErr(t, err)
				cmd.Stderr = os.Stderr
				noErr(t, cmd.Start())
				started := make(chan bool, 1)
				go func() {
					sc := bufio.NewScanner(out)
					ok := false
					for sc.Scan() {
						if strings.HasPrefix(sc.Text(), "i16-cron: started") {
							ok = true
							started <- true
						}
					}
					if !ok {
						started <- false
					}
				}()
				select {
				case ok := <-started:
					want(t, ok, "gocron helper exited before starting")
				case <-time.After(60 * time.Second):
					t.Fatal("gocron helper did not start")
				}
				procs, stdins = append(procs, cmd), append(stdins, in)
			}
			first := time.Now().Unix() + 1 // every scheduler runs from here
			time.Sleep(time.Until(time.Unix(first+5, 0)))
			last := time.Now().Unix() - 1
			for i, p := range procs {
				_ = stdins[i].Close()
				_ = p.Wait()
			}
			var rows []runRow
			noErr(t, tg.DB.Where("job = ? AND occ >= ? AND occ <= ?", job, first, last).Find(&rows).Error)
			per := map[int64]int{}
			for _, r := range rows {
				per[r.Occ]++
			}
			dups, missing := 0, 0
			for occ := first; occ <= last; occ++ {
				switch n := per[occ]; {
				case n == 0:
					missing++
				case n > 1:
					dups += n - 1
				}
			}
			t.Logf("hold %d ms: %d occurrences, %d runs, %d duplicate runs, %d occurrences not run", hold, last-first+1, len(rows), dups, missing)
			if hold == 0 {
				want(t, dups > 0, "the baseline must run occurrences twice")
			} else {
				want(t, dups == 0 && missing == 0, "with HoldAtLeast: %d duplicates, %d missing", dups, missing)
			}
		})
	}
}
