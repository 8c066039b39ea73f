package ctxjoin

import (
	"context"
	"errors"
	"testing"
	"time"

	"gorm.io/gorm"
)

func TestJoinEndsWhenEitherEnds(t *testing.T) {
	for _, which := range []string{"explicit", "db"} {
		t.Run(which, func(t *testing.T) {
			explicit, cancelExplicit := context.WithCancel(context.Background())
			defer cancelExplicit()
			dbCtx, cancelDB := context.WithCancel(context.Background())
			defer cancelDB()
			db := withContext(dbCtx)

			joined, cancel := Join(explicit, db)
			defer cancel()
			if joined.Err() != nil {
				t.Fatalf("joined context done before either ended: %v", joined.Err())
			}
			if which == "explicit" {
				cancelExplicit()
			} else {
				cancelDB()
			}
			select {
			case <-joined.Done():
			case <-time.After(time.Second):
				t.Fatal("joined context still running after the " + which + " context was cancelled")
			}
			if !errors.Is(joined.Err(), context.Canceled) {
				t.Fatalf("Err() = %v, want context.Canceled", joined.Err())
			}
		})
	}
}

func TestJoinTakesTheEarlierDeadline(t *testing.T) {
	dbCtx, cancelDB := context.WithTimeout(context.Background(), time.Hour)
	defer cancelDB()
	want, _ := dbCtx.Deadline()
	db := withContext(dbCtx)
	joined, cancel := Join(context.Background(), db)
	defer cancel()
	got, ok := joined.Deadline()
	if !ok || !got.Equal(want) {
		t.Fatalf("Deadline() = %v, %v; want %v from db's context", got, ok, want)
	}
}

func TestJoinWithoutADBContextIsCtx(t *testing.T) {
	ctx := context.WithValue(context.Background(), valueKey{}, 1)
	joined, cancel := Join(ctx, &gorm.DB{Statement: &gorm.Statement{}})
	defer cancel()
	if joined != ctx {
		t.Fatal("Join without a db context should return ctx itself")
	}
	joined, cancel = Join(ctx, nil)
	defer cancel()
	if joined != ctx {
		t.Fatal("Join with a nil db should return ctx itself")
	}
}

// withContext is what db.WithContext(ctx) leaves in the statement, without
// opening a database.
func withContext(ctx context.Context) *gorm.DB {
	return &gorm.DB{Statement: &gorm.Statement{Context: ctx}}
}

type valueKey struct{}

func TestJoinOfAnEndedContextIsDoneAtOnce(t *testing.T) {
	dbCtx, cancelDB := context.WithCancel(context.Background())
	cancelDB()
	joined, cancel := Join(context.Background(), withContext(dbCtx))
	defer cancel()
	if !errors.Is(joined.Err(), context.Canceled) {
		t.Fatalf("Err() right after Join = %v, want context.Canceled", joined.Err())
	}
}
