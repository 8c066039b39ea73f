package sqlstore

import (
	"context"
	"database/sql"
	"errors"
)

// holderTmpl reads a name's fence and whether it is held now, by the
// database's clock.
const holderTmpl = `SELECT fence, CASE WHEN expires_at = 0 OR expires_at > {now} THEN 1 ELSE 0 END FROM {t} WHERE lock_name = {name}`

// Holder reads, without taking anything, the fence of name's latest lease
// and whether it is held now by the database's clock: 0 and false for a
// name never taken. Package election uses it for Leader and Observe.
func (s *Store) Holder(ctx context.Context, name string) (fence int64, held bool, err error) {
	ctx, cancel, err := s.join(ctx, "holder")
	if err != nil {
		return 0, false, err
	}
	defer cancel()
	st := renderOne(s.dr, s.quoted, holderTmpl)
	var h int64
	err = s.pool.QueryRowContext(ctx, st.SQL, st.bind(values{name: key(name)})...).Scan(&fence, &h)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, s.wrap("holder", err)
	}
	return fence, h == 1, nil
}
