package lockplugin_test

import (
	"context"
	"database/sql/driver"
	"fmt"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/lockplugin/lockplugin"
)

// A worker claims up to ten queued jobs, marks them running, and gets them
// back: each job goes to exactly one worker, however many claim at once.
func ExampleClaim() {
	var db *gorm.DB // opened with your dialector, then db.Use(lockplugin.New())
	ctx := context.Background()

	jobs, err := lockplugin.Claim[Job](ctx, db, 10,
		clause.Eq{Column: clause.Column{Name: "state"}, Value: "queued"},
		map[string]any{"state": "running"})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, j := range jobs {
		fmt.Println("working on job", j.ID)
	}
}

// On PostgreSQL a claim is one statement: the SKIP LOCKED subquery picks
// the rows, the UPDATE marks them, RETURNING hands them back. (The
// database here is a stand-in that records what it is sent.)
func ExampleClaim_postgres() {
	var t exampleT
	db, rec := claimDB(&t, "postgres", "", [][]driver.Value{{int64(3), "running", int64(7), int64(1)}})

	jobs, err := lockplugin.Claim[claimJob](context.Background(), db, 10,
		gorm.Expr("state = ? AND attempts < ?", "queued", 5),
		map[string]any{"state": "running", "worker": 7, "attempts": gorm.Expr("attempts + 1")})
	fmt.Println(rec.statements()[0])
	fmt.Printf("%+v %v\n", jobs, err)
	t.cleanup()
	// Output:
	// UPDATE "jobs" SET "attempts"=attempts + 1,"state"=$1,"worker"=$2 FROM (SELECT "id" FROM "jobs" WHERE (state = $3 AND attempts < $4) ORDER BY "id" LIMIT $5 FOR UPDATE SKIP LOCKED) AS "lockplugin_claimed" WHERE "jobs"."id" = "lockplugin_claimed"."id" RETURNING "jobs".* [running 7 queued 5 10]
	// [{ID:3 State:running Worker:7 Attempts:1}] <nil>
}
