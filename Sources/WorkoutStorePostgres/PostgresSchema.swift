import Foundation
import WorkoutStore

/// The PostgreSQL schema as versioned migrations (table `schema_migration`). Never edit a shipped migration:
/// add one and raise `version`.
///
/// Every table holding an athlete's data is partitioned by athlete (`PARTITION BY LIST (athlete)`): one
/// partition per athlete, created when the athlete's store is first opened, so each athlete's rows, indexes
/// and the per-activity statistics index live in their own partition and a query for one athlete touches
/// only that partition. Dates are seconds since 2001-01-01 UTC as in the SQLite backend; sample and route
/// chunks are `bytea` holding the same chunk format (WKC).
///
/// `package` for the tests that look at an athlete's partitions by name (``partition(_:athlete:)``).
package enum PostgresSchema {
    static let version = 7

    /// The tables whose rows a live recording rewrites in place (each stream's open chunk, once a commit) and
    /// the fill factor of their partitions: pages are filled to it by inserts, the rest is kept for the new
    /// versions of updated rows, so that a rewrite stays on its page and adds no index entries (a HOT update).
    static let rewrittenTables = ["sample_chunk": 70, "route_chunk": 70]

    /// The tables partitioned by athlete, in creation order.
    static let partitionedTables = [
        "workout", "activity", "statistic", "event", "sample_chunk", "route_chunk", "deleted_object",
        "journal_session", "journal_change",
    ]

    static let migrations: [Int: String] = [
        1: """
        CREATE SEQUENCE workout_row_seq;
        CREATE SEQUENCE activity_row_seq;
        CREATE TABLE athlete_partition(athlete uuid PRIMARY KEY, anchor bigint NOT NULL DEFAULT 0);
        CREATE TABLE workout(
            athlete uuid NOT NULL, row_id bigint NOT NULL DEFAULT nextval('workout_row_seq'), uuid uuid NOT NULL,
            activity_type text NOT NULL, start double precision NOT NULL, "end" double precision NOT NULL,
            duration double precision NOT NULL, elapsed double precision NOT NULL, configuration text NOT NULL,
            metadata text NOT NULL, counters text NOT NULL, anchor bigint NOT NULL,
            recording boolean NOT NULL DEFAULT false,
            PRIMARY KEY (athlete, row_id), UNIQUE (athlete, uuid)) PARTITION BY LIST (athlete);
        CREATE INDEX workout_start ON workout(athlete, start);
        CREATE INDEX workout_anchor ON workout(athlete, anchor);
        CREATE TABLE activity(
            athlete uuid NOT NULL, row_id bigint NOT NULL DEFAULT nextval('activity_row_seq'), uuid uuid NOT NULL,
            workout_row bigint NOT NULL, position integer NOT NULL, implicit boolean NOT NULL,
            activity_type text NOT NULL, start double precision NOT NULL, "end" double precision,
            duration double precision NOT NULL, configuration text NOT NULL, metadata text NOT NULL,
            PRIMARY KEY (athlete, row_id)) PARTITION BY LIST (athlete);
        CREATE INDEX activity_workout ON activity(athlete, workout_row);
        CREATE TABLE statistic(
            athlete uuid NOT NULL, workout_row bigint NOT NULL, activity_row bigint, activity_type text NOT NULL,
            quantity_type text NOT NULL, minimum double precision, maximum double precision,
            average double precision, sum double precision, most_recent double precision,
            most_recent_date double precision, start double precision NOT NULL, "end" double precision NOT NULL,
            duration double precision NOT NULL, covered double precision NOT NULL, sample_count integer NOT NULL,
            workout_start double precision NOT NULL, workout_uuid uuid NOT NULL) PARTITION BY LIST (athlete);
        CREATE INDEX statistic_workout ON statistic(athlete, workout_row);
        CREATE INDEX statistic_activity ON statistic(athlete, activity_row, quantity_type);
        CREATE INDEX statistic_average ON statistic(quantity_type, activity_type, average, workout_start, workout_uuid)
            WHERE activity_row IS NOT NULL;
        CREATE INDEX statistic_minimum ON statistic(quantity_type, activity_type, minimum, workout_start, workout_uuid)
            WHERE activity_row IS NOT NULL;
        CREATE INDEX statistic_maximum ON statistic(quantity_type, activity_type, maximum, workout_start, workout_uuid)
            WHERE activity_row IS NOT NULL;
        CREATE INDEX statistic_sum ON statistic(quantity_type, activity_type, sum, workout_start, workout_uuid)
            WHERE activity_row IS NOT NULL;
        CREATE TABLE event(
            athlete uuid NOT NULL, workout_row bigint NOT NULL, position integer NOT NULL, type text NOT NULL,
            start double precision NOT NULL, duration double precision NOT NULL, metadata text NOT NULL)
            PARTITION BY LIST (athlete);
        CREATE INDEX event_workout ON event(athlete, workout_row);
        CREATE TABLE sample_chunk(
            athlete uuid NOT NULL, workout_row bigint NOT NULL, type text NOT NULL, source_name text NOT NULL,
            source_manufacturer text, source_model text, source_identifier text, first_ordinal bigint NOT NULL,
            last_ordinal bigint NOT NULL, count integer NOT NULL, start_min double precision NOT NULL,
            start_max double precision NOT NULL, end_min double precision NOT NULL, end_max double precision NOT NULL,
            value_min double precision, value_max double precision, data bytea NOT NULL,
            PRIMARY KEY (athlete, workout_row, first_ordinal)) PARTITION BY LIST (athlete);
        CREATE INDEX sample_chunk_type_start ON sample_chunk(athlete, type, start_min);
        CREATE TABLE route_chunk(
            athlete uuid NOT NULL, workout_row bigint NOT NULL, first_ordinal bigint NOT NULL,
            last_ordinal bigint NOT NULL, count integer NOT NULL, date_min double precision NOT NULL,
            date_max double precision NOT NULL, data bytea NOT NULL,
            PRIMARY KEY (athlete, workout_row, first_ordinal)) PARTITION BY LIST (athlete);
        CREATE TABLE deleted_object(
            athlete uuid NOT NULL, anchor bigint NOT NULL, kind text NOT NULL, uuid uuid NOT NULL,
            PRIMARY KEY (athlete, anchor)) PARTITION BY LIST (athlete);
        CREATE TABLE journal_session(
            athlete uuid NOT NULL, uuid uuid NOT NULL, configuration text NOT NULL, options text NOT NULL,
            created double precision NOT NULL, workout_row bigint NOT NULL,
            PRIMARY KEY (athlete, uuid)) PARTITION BY LIST (athlete);
        CREATE TABLE journal_change(
            athlete uuid NOT NULL, session uuid NOT NULL, seq bigint NOT NULL, kind text NOT NULL,
            count integer NOT NULL, payload text,
            PRIMARY KEY (athlete, session, seq)) PARTITION BY LIST (athlete);
        """,
        // A team's query ("any cycling activity of these 50 athletes averaging > 150 bpm") over the
        // partitioned `statistic` spent most of its time planning one scan per athlete's partition. The
        // activities' statistics are kept a second time in one unpartitioned table whose indexes lead with
        // the quantity and activity types, then the athlete: a team's query is one index scan per
        // aggregate, planned once, whatever the number of athletes or partitions.
        2: """
        CREATE TABLE team_statistic(
            athlete uuid NOT NULL, workout_row bigint NOT NULL, activity_row bigint NOT NULL,
            activity_type text NOT NULL, quantity_type text NOT NULL, minimum double precision,
            maximum double precision, average double precision, sum double precision,
            workout_start double precision NOT NULL, workout_uuid uuid NOT NULL);
        CREATE INDEX team_statistic_workout ON team_statistic(athlete, workout_row);
        CREATE INDEX team_statistic_average ON team_statistic(quantity_type, activity_type, athlete, average)
            INCLUDE (workout_start, workout_uuid, workout_row, activity_row);
        CREATE INDEX team_statistic_minimum ON team_statistic(quantity_type, activity_type, athlete, minimum)
            INCLUDE (workout_start, workout_uuid, workout_row, activity_row);
        CREATE INDEX team_statistic_maximum ON team_statistic(quantity_type, activity_type, athlete, maximum)
            INCLUDE (workout_start, workout_uuid, workout_row, activity_row);
        CREATE INDEX team_statistic_sum ON team_statistic(quantity_type, activity_type, athlete, sum)
            INCLUDE (workout_start, workout_uuid, workout_row, activity_row);
        INSERT INTO team_statistic(athlete, workout_row, activity_row, activity_type, quantity_type, minimum, maximum,
                                   average, sum, workout_start, workout_uuid)
            SELECT athlete, workout_row, activity_row, activity_type, quantity_type, minimum, maximum, average, sum,
                   workout_start, workout_uuid
            FROM statistic WHERE activity_row IS NOT NULL
        """,
        // Migration 3 is in `codeMigrations` (a statement per existing partition).
    ]

    /// Migrations run as code (statements that depend on the database's content), by version.
    ///
    /// 3: a live commit rewrites each stream's open chunk row. With full pages every rewrite went to another page
    /// and added an entry to each of the table's indexes; room kept on each page lets the new version stay beside
    /// the old (a HOT update: no index entry, the old version pruned in place). New partitions are created with
    /// `rewrittenTables`' fill factor; the existing ones get it for the pages they fill from now on.
    static let codeMigrations: [Int: @Sendable (Transaction) throws -> Void] = [
        3: { transaction in
            for row in try transaction.run("SELECT athlete FROM athlete_partition") {
                let athlete = try row.uuid(0)
                for (table, fillFactor) in rewrittenTables {
                    try transaction.run("ALTER TABLE \(partition(table, athlete: athlete)) SET (fillfactor = \(fillFactor))")
                }
            }
        },
        4: { transaction in try transaction.run(journalAppendFunction) },
        5: { transaction in try transaction.run(journalAppendInStepFunction) },
        6: { transaction in
            try transaction.run(journalAppendIndexedCheckFunction)
            try transaction.run(journalCommitProcedure)
        },
        7: { transaction in try transaction.run(journalCommitGroupProcedure) },
    ]

    /// Migration 6, first statement: migration 5's function with its continuity check reading the last change by
    /// the primary key's order (`ORDER BY seq DESC LIMIT 1`) instead of `max(seq)`.
    ///
    /// With the `max(seq)` form over the athlete-partitioned `journal_change` the function cost up to 5 times
    /// migration 4's PostgreSQL CPU per commit, varying from run to run (pgbench, 3,000 calls: 4.0, 7.3 and 1.3 s
    /// against 1.4 s; most likely PL/pgSQL planning it again on many calls, not verified), under the session row's
    /// lock. The `LIMIT 1` form, an index-only scan backward of the one partition, cost as migration 4 in every
    /// round (1.3 to 1.5 s). Otherwise as migration 5.
    ///
    /// Its own text, not migration 5's edited: a shipped migration never changes, and one built from another's
    /// literal would change with any edit of that one.
    package static let journalAppendIndexedCheckFunction = """
        CREATE OR REPLACE FUNCTION workout_journal_append(
            p_athlete uuid, p_session uuid,
            c_type text[], c_name text[], c_manufacturer text[], c_has_manufacturer boolean[], c_model text[],
            c_has_model boolean[], c_identifier text[], c_has_identifier boolean[], c_first bigint[], c_last bigint[],
            c_count bigint[], c_start_min float8[], c_start_max float8[], c_end_min float8[], c_end_max float8[],
            c_value_min float8[], c_has_value_min boolean[], c_value_max float8[], c_has_value_max boolean[],
            c_data bytea[],
            r_first bigint[], r_last bigint[], r_count bigint[], r_date_min float8[], r_date_max float8[],
            r_data bytea[],
            j_seq bigint[], j_kind text[], j_count bigint[], j_payload text[], j_has_payload boolean[]
        ) RETURNS bigint LANGUAGE plpgsql AS $function$
        DECLARE
            v_row bigint;
            v_next bigint;
        BEGIN
            SELECT workout_row INTO v_row FROM journal_session
                WHERE athlete = p_athlete AND uuid = p_session FOR UPDATE;
            IF v_row IS NULL THEN
                RETURN NULL;
            END IF;
            IF cardinality(j_seq) > 0 THEN
                SELECT seq + 1 INTO v_next FROM journal_change
                    WHERE athlete = p_athlete AND session = p_session ORDER BY seq DESC LIMIT 1;
                v_next := coalesce(v_next, 0);
                IF j_seq[1] <> v_next OR j_seq[cardinality(j_seq)] <> v_next + cardinality(j_seq) - 1 THEN
                    RAISE EXCEPTION 'the journal continues at change %, not at change %', v_next, j_seq[1]
                        USING ERRCODE = 'WJ001';
                END IF;
            END IF;
            IF cardinality(c_type) > 0 THEN
                INSERT INTO sample_chunk(athlete, workout_row, type, source_name, source_manufacturer, source_model,
                                         source_identifier, first_ordinal, last_ordinal, count, start_min, start_max,
                                         end_min, end_max, value_min, value_max, data)
                SELECT p_athlete, v_row, u.type, u.name, CASE WHEN u.has_manufacturer THEN u.manufacturer END,
                       CASE WHEN u.has_model THEN u.model END, CASE WHEN u.has_identifier THEN u.identifier END,
                       u.first, u.last, u.count::integer, u.start_min, u.start_max, u.end_min, u.end_max,
                       CASE WHEN u.has_value_min THEN u.value_min END, CASE WHEN u.has_value_max THEN u.value_max END,
                       u.data
                FROM unnest(c_type, c_name, c_manufacturer, c_has_manufacturer, c_model, c_has_model, c_identifier,
                            c_has_identifier, c_first, c_last, c_count, c_start_min, c_start_max, c_end_min, c_end_max,
                            c_value_min, c_has_value_min, c_value_max, c_has_value_max, c_data)
                    AS u(type, name, manufacturer, has_manufacturer, model, has_model, identifier, has_identifier,
                         first, last, count, start_min, start_max, end_min, end_max, value_min, has_value_min,
                         value_max, has_value_max, data)
                ON CONFLICT (athlete, workout_row, first_ordinal) DO UPDATE SET
                    type = excluded.type, source_name = excluded.source_name,
                    source_manufacturer = excluded.source_manufacturer, source_model = excluded.source_model,
                    source_identifier = excluded.source_identifier, last_ordinal = excluded.last_ordinal,
                    count = excluded.count, start_min = excluded.start_min, start_max = excluded.start_max,
                    end_min = excluded.end_min, end_max = excluded.end_max, value_min = excluded.value_min,
                    value_max = excluded.value_max, data = excluded.data;
            END IF;
            IF cardinality(r_first) > 0 THEN
                INSERT INTO route_chunk(athlete, workout_row, first_ordinal, last_ordinal, count, date_min, date_max, data)
                SELECT p_athlete, v_row, u.first, u.last, u.count::integer, u.date_min, u.date_max, u.data
                FROM unnest(r_first, r_last, r_count, r_date_min, r_date_max, r_data)
                    AS u(first, last, count, date_min, date_max, data)
                ON CONFLICT (athlete, workout_row, first_ordinal) DO UPDATE SET
                    last_ordinal = excluded.last_ordinal, count = excluded.count, date_min = excluded.date_min,
                    date_max = excluded.date_max, data = excluded.data;
            END IF;
            IF cardinality(j_seq) > 0 THEN
                INSERT INTO journal_change(athlete, session, seq, kind, count, payload)
                SELECT p_athlete, p_session, e.seq, e.kind, e.count::integer, CASE WHEN e.has_payload THEN e.payload END
                FROM unnest(j_seq, j_kind, j_count, j_payload, j_has_payload) AS e(seq, kind, count, payload, has_payload);
            END IF;
            RETURN v_row;
        END
        $function$
        """

    /// Migration 6: a live journal commit as one statement that commits itself, `CALL workout_journal_commit(…)`.
    ///
    /// A journal commit is acknowledged to a client, so it counts only once PostgreSQL answered that it committed.
    /// A statement run alone is answered (CommandComplete) before its implicit commit, whose failure (a deferred
    /// constraint, an immediate shutdown flushing the answer before the commit record) then comes too late; run
    /// between BEGIN and COMMIT it costs three round trips (PostgresNIO sends a query only once the previous one is
    /// answered), which at a thousand live sessions on two cores made batches queue for connections
    /// (docs/live-load.md). The procedure calls `workout_journal_append` and COMMITs inside the CALL (transaction
    /// control in a procedure CALLed at top level, PostgreSQL 11 and later): the commit is durable
    /// (`synchronous_commit = on`), or its error is the CALL's, before the CALL is answered; one round trip, and the
    /// session row's lock is released at that COMMIT. `r_row` (INOUT, passed NULL) comes back as the CALL's one row:
    /// the session's workout row, or NULL (nothing written) when the session's journal is gone. Inside a transaction
    /// block a CALL cannot COMMIT: the commits closing a session still call the function within their transaction.
    package static let journalCommitProcedure = """
        CREATE OR REPLACE PROCEDURE workout_journal_commit(
            p_athlete uuid, p_session uuid,
            c_type text[], c_name text[], c_manufacturer text[], c_has_manufacturer boolean[], c_model text[],
            c_has_model boolean[], c_identifier text[], c_has_identifier boolean[], c_first bigint[], c_last bigint[],
            c_count bigint[], c_start_min float8[], c_start_max float8[], c_end_min float8[], c_end_max float8[],
            c_value_min float8[], c_has_value_min boolean[], c_value_max float8[], c_has_value_max boolean[],
            c_data bytea[],
            r_first bigint[], r_last bigint[], r_count bigint[], r_date_min float8[], r_date_max float8[],
            r_data bytea[],
            j_seq bigint[], j_kind text[], j_count bigint[], j_payload text[], j_has_payload boolean[],
            INOUT r_row bigint
        ) LANGUAGE plpgsql AS $procedure$
        BEGIN
            r_row := workout_journal_append(
                p_athlete, p_session, c_type, c_name, c_manufacturer, c_has_manufacturer, c_model, c_has_model,
                c_identifier, c_has_identifier, c_first, c_last, c_count, c_start_min, c_start_max, c_end_min,
                c_end_max, c_value_min, c_has_value_min, c_value_max, c_has_value_max, c_data,
                r_first, r_last, r_count, r_date_min, r_date_max, r_data,
                j_seq, j_kind, j_count, j_payload, j_has_payload);
            COMMIT;
        END
        $procedure$
        """

    /// Migration 7: several live sessions' journal commits as one statement and one commit,
    /// `CALL workout_journal_commit_group(…)`.
    ///
    /// At a thousand live sessions the commits waiting for a connection at the same moment go together
    /// (`JournalCommitGroups`): one round trip, one transaction and one WAL flush for all of them instead of one
    /// each, and their chunks and changes written by one statement per table. Each member is checked as
    /// `workout_journal_append` checks a commit, under its own session row's lock: a member whose journal is gone
    /// or whose first change does not continue the stored journal is left out and the others are written. A row
    /// another transaction holds locked (another server committing the session) is skipped, not waited for, so
    /// that one session never holds up the group (nor times it out) and two groups never wait for each other:
    /// that member is left out too, for the caller to commit alone. Its outcome comes back in two arrays, one
    /// element per member (`b_…`): `o_rows`, the session's workout row where it was written, -2 where its row
    /// was locked, else -1; `o_next`, where it did not continue the journal, the number the journal continues at,
    /// else -1 (both -1: the journal is gone). The rows' arrays (`c_…`, `r_…`, `j_…`, as
    /// `workout_journal_append` takes them) hold every member's rows, each row's member in `c_batch`, `r_batch`
    /// and `j_batch` (1-based). An error of any row fails the whole CALL, which writes nothing; the caller then
    /// commits each member alone. COMMITs inside the CALL as `workout_journal_commit` does: answered only once
    /// durable.
    package static let journalCommitGroupProcedure = """
        CREATE OR REPLACE PROCEDURE workout_journal_commit_group(
            b_athlete uuid[], b_session uuid[], b_first bigint[], b_last bigint[], b_entries bigint[],
            c_batch bigint[], r_batch bigint[], j_batch bigint[],
            c_type text[], c_name text[], c_manufacturer text[], c_has_manufacturer boolean[], c_model text[],
            c_has_model boolean[], c_identifier text[], c_has_identifier boolean[], c_first bigint[], c_last bigint[],
            c_count bigint[], c_start_min float8[], c_start_max float8[], c_end_min float8[], c_end_max float8[],
            c_value_min float8[], c_has_value_min boolean[], c_value_max float8[], c_has_value_max boolean[],
            c_data bytea[],
            r_first bigint[], r_last bigint[], r_count bigint[], r_date_min float8[], r_date_max float8[],
            r_data bytea[],
            j_seq bigint[], j_kind text[], j_count bigint[], j_payload text[], j_has_payload boolean[],
            INOUT o_rows bigint[], INOUT o_next bigint[]
        ) LANGUAGE plpgsql AS $procedure$
        DECLARE
            v_members integer := coalesce(cardinality(b_session), 0);
            v_row bigint;
            v_next bigint;
        BEGIN
            o_rows := array_fill(-1::bigint, ARRAY[v_members]);
            o_next := array_fill(-1::bigint, ARRAY[v_members]);
            FOR i IN 1..v_members LOOP
                SELECT workout_row INTO v_row FROM journal_session
                    WHERE athlete = b_athlete[i] AND uuid = b_session[i] FOR UPDATE SKIP LOCKED;
                IF v_row IS NULL THEN
                    IF EXISTS (SELECT 1 FROM journal_session WHERE athlete = b_athlete[i] AND uuid = b_session[i]) THEN
                        o_rows[i] := -2;
                    END IF;
                    CONTINUE;
                END IF;
                IF b_entries[i] > 0 THEN
                    SELECT seq + 1 INTO v_next FROM journal_change
                        WHERE athlete = b_athlete[i] AND session = b_session[i] ORDER BY seq DESC LIMIT 1;
                    v_next := coalesce(v_next, 0);
                    IF b_first[i] <> v_next OR b_last[i] <> v_next + b_entries[i] - 1 THEN
                        o_next[i] := v_next;
                        CONTINUE;
                    END IF;
                END IF;
                o_rows[i] := v_row;
            END LOOP;
            IF cardinality(c_batch) > 0 THEN
                INSERT INTO sample_chunk(athlete, workout_row, type, source_name, source_manufacturer, source_model,
                                         source_identifier, first_ordinal, last_ordinal, count, start_min, start_max,
                                         end_min, end_max, value_min, value_max, data)
                SELECT b_athlete[u.batch], o_rows[u.batch], u.type, u.name,
                       CASE WHEN u.has_manufacturer THEN u.manufacturer END, CASE WHEN u.has_model THEN u.model END,
                       CASE WHEN u.has_identifier THEN u.identifier END,
                       u.first, u.last, u.count::integer, u.start_min, u.start_max, u.end_min, u.end_max,
                       CASE WHEN u.has_value_min THEN u.value_min END, CASE WHEN u.has_value_max THEN u.value_max END,
                       u.data
                FROM unnest(c_batch, c_type, c_name, c_manufacturer, c_has_manufacturer, c_model, c_has_model,
                            c_identifier, c_has_identifier, c_first, c_last, c_count, c_start_min, c_start_max,
                            c_end_min, c_end_max, c_value_min, c_has_value_min, c_value_max, c_has_value_max, c_data)
                    AS u(batch, type, name, manufacturer, has_manufacturer, model, has_model, identifier,
                         has_identifier, first, last, count, start_min, start_max, end_min, end_max, value_min,
                         has_value_min, value_max, has_value_max, data)
                WHERE o_rows[u.batch] >= 0
                ON CONFLICT (athlete, workout_row, first_ordinal) DO UPDATE SET
                    type = excluded.type, source_name = excluded.source_name,
                    source_manufacturer = excluded.source_manufacturer, source_model = excluded.source_model,
                    source_identifier = excluded.source_identifier, last_ordinal = excluded.last_ordinal,
                    count = excluded.count, start_min = excluded.start_min, start_max = excluded.start_max,
                    end_min = excluded.end_min, end_max = excluded.end_max, value_min = excluded.value_min,
                    value_max = excluded.value_max, data = excluded.data;
            END IF;
            IF cardinality(r_batch) > 0 THEN
                INSERT INTO route_chunk(athlete, workout_row, first_ordinal, last_ordinal, count, date_min, date_max, data)
                SELECT b_athlete[u.batch], o_rows[u.batch], u.first, u.last, u.count::integer, u.date_min, u.date_max,
                       u.data
                FROM unnest(r_batch, r_first, r_last, r_count, r_date_min, r_date_max, r_data)
                    AS u(batch, first, last, count, date_min, date_max, data)
                WHERE o_rows[u.batch] >= 0
                ON CONFLICT (athlete, workout_row, first_ordinal) DO UPDATE SET
                    last_ordinal = excluded.last_ordinal, count = excluded.count, date_min = excluded.date_min,
                    date_max = excluded.date_max, data = excluded.data;
            END IF;
            IF cardinality(j_batch) > 0 THEN
                INSERT INTO journal_change(athlete, session, seq, kind, count, payload)
                SELECT b_athlete[e.batch], b_session[e.batch], e.seq, e.kind, e.count::integer,
                       CASE WHEN e.has_payload THEN e.payload END
                FROM unnest(j_batch, j_seq, j_kind, j_count, j_payload, j_has_payload)
                    AS e(batch, seq, kind, count, payload, has_payload)
                WHERE o_rows[e.batch] >= 0;
            END IF;
            COMMIT;
        END
        $procedure$
        """

    /// The SQLSTATE `workout_journal_append` raises (migration 5) for entries that do not continue the stored
    /// journal: `StoreError.journalOutOfStep`.
    static let journalOutOfStepState = "WJ001"

    /// Migration 5: `workout_journal_append` refuses entries that do not continue the stored journal.
    ///
    /// Under the session row's lock (every commit of the session takes it first), the first new change must be
    /// numbered one past the last stored one (0 for an empty journal) and the new ones follow each other: else
    /// the writer's numbering went past the stored journal (a commit it was told was done was not kept: the
    /// autocommit's early answer of a PostgreSQL stopped immediately), writing would leave a gap that recovery
    /// refuses for ever, and the call raises SQLSTATE `WJ001` instead, writing nothing. Otherwise as migration 4.
    package static let journalAppendInStepFunction = """
        CREATE OR REPLACE FUNCTION workout_journal_append(
            p_athlete uuid, p_session uuid,
            c_type text[], c_name text[], c_manufacturer text[], c_has_manufacturer boolean[], c_model text[],
            c_has_model boolean[], c_identifier text[], c_has_identifier boolean[], c_first bigint[], c_last bigint[],
            c_count bigint[], c_start_min float8[], c_start_max float8[], c_end_min float8[], c_end_max float8[],
            c_value_min float8[], c_has_value_min boolean[], c_value_max float8[], c_has_value_max boolean[],
            c_data bytea[],
            r_first bigint[], r_last bigint[], r_count bigint[], r_date_min float8[], r_date_max float8[],
            r_data bytea[],
            j_seq bigint[], j_kind text[], j_count bigint[], j_payload text[], j_has_payload boolean[]
        ) RETURNS bigint LANGUAGE plpgsql AS $function$
        DECLARE
            v_row bigint;
            v_next bigint;
        BEGIN
            SELECT workout_row INTO v_row FROM journal_session
                WHERE athlete = p_athlete AND uuid = p_session FOR UPDATE;
            IF v_row IS NULL THEN
                RETURN NULL;
            END IF;
            IF cardinality(j_seq) > 0 THEN
                SELECT coalesce(max(seq), -1) + 1 INTO v_next FROM journal_change
                    WHERE athlete = p_athlete AND session = p_session;
                IF j_seq[1] <> v_next OR j_seq[cardinality(j_seq)] <> v_next + cardinality(j_seq) - 1 THEN
                    RAISE EXCEPTION 'the journal continues at change %, not at change %', v_next, j_seq[1]
                        USING ERRCODE = 'WJ001';
                END IF;
            END IF;
            IF cardinality(c_type) > 0 THEN
                INSERT INTO sample_chunk(athlete, workout_row, type, source_name, source_manufacturer, source_model,
                                         source_identifier, first_ordinal, last_ordinal, count, start_min, start_max,
                                         end_min, end_max, value_min, value_max, data)
                SELECT p_athlete, v_row, u.type, u.name, CASE WHEN u.has_manufacturer THEN u.manufacturer END,
                       CASE WHEN u.has_model THEN u.model END, CASE WHEN u.has_identifier THEN u.identifier END,
                       u.first, u.last, u.count::integer, u.start_min, u.start_max, u.end_min, u.end_max,
                       CASE WHEN u.has_value_min THEN u.value_min END, CASE WHEN u.has_value_max THEN u.value_max END,
                       u.data
                FROM unnest(c_type, c_name, c_manufacturer, c_has_manufacturer, c_model, c_has_model, c_identifier,
                            c_has_identifier, c_first, c_last, c_count, c_start_min, c_start_max, c_end_min, c_end_max,
                            c_value_min, c_has_value_min, c_value_max, c_has_value_max, c_data)
                    AS u(type, name, manufacturer, has_manufacturer, model, has_model, identifier, has_identifier,
                         first, last, count, start_min, start_max, end_min, end_max, value_min, has_value_min,
                         value_max, has_value_max, data)
                ON CONFLICT (athlete, workout_row, first_ordinal) DO UPDATE SET
                    type = excluded.type, source_name = excluded.source_name,
                    source_manufacturer = excluded.source_manufacturer, source_model = excluded.source_model,
                    source_identifier = excluded.source_identifier, last_ordinal = excluded.last_ordinal,
                    count = excluded.count, start_min = excluded.start_min, start_max = excluded.start_max,
                    end_min = excluded.end_min, end_max = excluded.end_max, value_min = excluded.value_min,
                    value_max = excluded.value_max, data = excluded.data;
            END IF;
            IF cardinality(r_first) > 0 THEN
                INSERT INTO route_chunk(athlete, workout_row, first_ordinal, last_ordinal, count, date_min, date_max, data)
                SELECT p_athlete, v_row, u.first, u.last, u.count::integer, u.date_min, u.date_max, u.data
                FROM unnest(r_first, r_last, r_count, r_date_min, r_date_max, r_data)
                    AS u(first, last, count, date_min, date_max, data)
                ON CONFLICT (athlete, workout_row, first_ordinal) DO UPDATE SET
                    last_ordinal = excluded.last_ordinal, count = excluded.count, date_min = excluded.date_min,
                    date_max = excluded.date_max, data = excluded.data;
            END IF;
            IF cardinality(j_seq) > 0 THEN
                INSERT INTO journal_change(athlete, session, seq, kind, count, payload)
                SELECT p_athlete, p_session, e.seq, e.kind, e.count::integer, CASE WHEN e.has_payload THEN e.payload END
                FROM unnest(j_seq, j_kind, j_count, j_payload, j_has_payload) AS e(seq, kind, count, payload, has_payload);
            END IF;
            RETURN v_row;
        END
        $function$
        """

    /// Migration 4: a journal commit as one function call, `workout_journal_append`.
    ///
    /// A live server commits a thousand journals a second, each one statement of a few kilobytes that
    /// PostgreSQL parsed, analysed and planned every time (40 % of its CPU under that load). The function's
    /// statements are prepared once per connection and their plans kept (PL/pgSQL); the call itself is a
    /// small statement. It locks the session's journal row, upserts the sample and route chunks (the open
    /// tail replaced, as `sampleChunkUpsert` and `routeChunkUpsert` do), appends the journal entries, and
    /// returns the session's workout row, or NULL (writing nothing) when the session's journal is gone.
    /// Arrays hold one element per row; a nullable column has a flag array beside it.
    package static let journalAppendFunction = """
        CREATE FUNCTION workout_journal_append(
            p_athlete uuid, p_session uuid,
            c_type text[], c_name text[], c_manufacturer text[], c_has_manufacturer boolean[], c_model text[],
            c_has_model boolean[], c_identifier text[], c_has_identifier boolean[], c_first bigint[], c_last bigint[],
            c_count bigint[], c_start_min float8[], c_start_max float8[], c_end_min float8[], c_end_max float8[],
            c_value_min float8[], c_has_value_min boolean[], c_value_max float8[], c_has_value_max boolean[],
            c_data bytea[],
            r_first bigint[], r_last bigint[], r_count bigint[], r_date_min float8[], r_date_max float8[],
            r_data bytea[],
            j_seq bigint[], j_kind text[], j_count bigint[], j_payload text[], j_has_payload boolean[]
        ) RETURNS bigint LANGUAGE plpgsql AS $function$
        DECLARE
            v_row bigint;
        BEGIN
            SELECT workout_row INTO v_row FROM journal_session
                WHERE athlete = p_athlete AND uuid = p_session FOR UPDATE;
            IF v_row IS NULL THEN
                RETURN NULL;
            END IF;
            IF cardinality(c_type) > 0 THEN
                INSERT INTO sample_chunk(athlete, workout_row, type, source_name, source_manufacturer, source_model,
                                         source_identifier, first_ordinal, last_ordinal, count, start_min, start_max,
                                         end_min, end_max, value_min, value_max, data)
                SELECT p_athlete, v_row, u.type, u.name, CASE WHEN u.has_manufacturer THEN u.manufacturer END,
                       CASE WHEN u.has_model THEN u.model END, CASE WHEN u.has_identifier THEN u.identifier END,
                       u.first, u.last, u.count::integer, u.start_min, u.start_max, u.end_min, u.end_max,
                       CASE WHEN u.has_value_min THEN u.value_min END, CASE WHEN u.has_value_max THEN u.value_max END,
                       u.data
                FROM unnest(c_type, c_name, c_manufacturer, c_has_manufacturer, c_model, c_has_model, c_identifier,
                            c_has_identifier, c_first, c_last, c_count, c_start_min, c_start_max, c_end_min, c_end_max,
                            c_value_min, c_has_value_min, c_value_max, c_has_value_max, c_data)
                    AS u(type, name, manufacturer, has_manufacturer, model, has_model, identifier, has_identifier,
                         first, last, count, start_min, start_max, end_min, end_max, value_min, has_value_min,
                         value_max, has_value_max, data)
                ON CONFLICT (athlete, workout_row, first_ordinal) DO UPDATE SET
                    type = excluded.type, source_name = excluded.source_name,
                    source_manufacturer = excluded.source_manufacturer, source_model = excluded.source_model,
                    source_identifier = excluded.source_identifier, last_ordinal = excluded.last_ordinal,
                    count = excluded.count, start_min = excluded.start_min, start_max = excluded.start_max,
                    end_min = excluded.end_min, end_max = excluded.end_max, value_min = excluded.value_min,
                    value_max = excluded.value_max, data = excluded.data;
            END IF;
            IF cardinality(r_first) > 0 THEN
                INSERT INTO route_chunk(athlete, workout_row, first_ordinal, last_ordinal, count, date_min, date_max, data)
                SELECT p_athlete, v_row, u.first, u.last, u.count::integer, u.date_min, u.date_max, u.data
                FROM unnest(r_first, r_last, r_count, r_date_min, r_date_max, r_data)
                    AS u(first, last, count, date_min, date_max, data)
                ON CONFLICT (athlete, workout_row, first_ordinal) DO UPDATE SET
                    last_ordinal = excluded.last_ordinal, count = excluded.count, date_min = excluded.date_min,
                    date_max = excluded.date_max, data = excluded.data;
            END IF;
            IF cardinality(j_seq) > 0 THEN
                INSERT INTO journal_change(athlete, session, seq, kind, count, payload)
                SELECT p_athlete, p_session, e.seq, e.kind, e.count::integer, CASE WHEN e.has_payload THEN e.payload END
                FROM unnest(j_seq, j_kind, j_count, j_payload, j_has_payload) AS e(seq, kind, count, payload, has_payload);
            END IF;
            RETURN v_row;
        END
        $function$
        """

    /// The oldest PostgreSQL the schema runs on, as `server_version_num` counts (11.0): migration 6's procedure
    /// COMMITs inside its CALL (transaction control in procedures came with PostgreSQL 11).
    package static let minimumServerVersion = 110_000

    /// Refuses a server older than `minimumServerVersion`, given its `server_version_num` (`location`: the database,
    /// for the message): `StoreError.unsupportedServer`, before anything is written.
    package static func checkServerVersion(_ versionNumber: Int, location: String) throws(StoreError) {
        guard versionNumber >= minimumServerVersion else {
            throw .unsupportedServer(path: location, found: versionNumber, needed: minimumServerVersion)
        }
    }

    /// The server's `server_version_num`, checked by `checkServerVersion` (the first statement of a migration and
    /// of a read-only database's check).
    static func checkServerVersion(_ transaction: Transaction, location: String) throws {
        let number = try transaction.run("SELECT current_setting('server_version_num')::bigint").first?.int(0) ?? 0
        try checkServerVersion(Int(number), location: location)
    }

    /// Brings the database to `version` (under an advisory lock: several servers may start at once).
    /// A database written by a newer version is refused and left as it is, and so is a server older than
    /// PostgreSQL 11 (`minimumServerVersion`).
    static func migrate(_ pool: ConnectionPool) throws(StoreError) {
        try pool.transaction { transaction in
            try checkServerVersion(transaction, location: pool.url.redacted)
            // A migration rewrites whole tables: it runs without the statement time limit.
            try transaction.run("SET LOCAL statement_timeout TO 0")
            try transaction.run("SELECT pg_advisory_xact_lock(7308519)")
            try transaction.run(
                "CREATE TABLE IF NOT EXISTS schema_migration(version integer PRIMARY KEY, applied timestamptz NOT NULL DEFAULT now())"
            )
            let current = try transaction.run("SELECT coalesce(max(version), 0)::bigint FROM schema_migration")
                .first?.int(0) ?? 0
            if current > Int64(version) {
                throw StoreError.newerSchema(path: pool.url.redacted, found: Int(current), supported: version)
            }
            for next in (Int(current) + 1)..<(version + 1) {
                // One statement per round trip (the extended protocol takes one); none contains a ';'.
                for statement in (migrations[next] ?? "").split(separator: ";")
                where !statement.allSatisfy({ $0.isWhitespace }) {
                    try transaction.run(String(statement))
                }
                try codeMigrations[next]?(transaction)
                var record = SQL()
                record.text = "INSERT INTO schema_migration(version) VALUES (\(record.bind(.int(Int64(next)))))"
                try transaction.run(record)
            }
        }
    }

    /// Checks that a database opened read-only (a replica) holds a schema this program reads.
    static func checkReadable(_ pool: ConnectionPool) throws(StoreError) {
        let found = try pool.transaction(readOnly: true) { transaction -> Int64 in
            try checkServerVersion(transaction, location: pool.url.redacted)
            let exists = try transaction.run("SELECT to_regclass('schema_migration') IS NOT NULL").first?.bool(0) ?? false
            guard exists else { return 0 }
            return try transaction.run("SELECT coalesce(max(version), 0)::bigint FROM schema_migration").first?.int(0) ?? 0
        }
        if found > Int64(version) {
            throw StoreError.newerSchema(path: pool.url.redacted, found: Int(found), supported: version)
        }
        if found < Int64(version) {
            throw StoreError.database(
                path: pool.url.redacted,
                detail: "the read-only database has schema version \(found), not \(version): point it at a replica of "
                    + "the primary database, and start the server on the primary first (it migrates the schema)")
        }
    }

    /// The partition of `table` holding `athlete`'s rows (`workout_` and the athlete's id without dashes, for
    /// `workout`).
    package static func partition(_ table: String, athlete: UUID) -> String {
        table + "_" + athlete.uuidString.lowercased().replacingOccurrences(of: "-", with: "")
    }

    /// Creates `athlete`'s partitions when missing (idempotent, safe from several servers at once).
    static func ensurePartitions(_ pool: ConnectionPool, athlete: UUID) throws(StoreError) {
        var probe = SQL()
        probe.text = "SELECT 1 FROM athlete_partition WHERE athlete = \(probe.bind(.uuid(athlete)))"
        if try pool.transaction(readOnly: true, { try !$0.run(probe).isEmpty }) { return }
        try pool.transaction { transaction in
            try transaction.run("SELECT pg_advisory_xact_lock(7308520)")
            if try !transaction.run(probe).isEmpty { return }
            // The athlete's id is a UUID we format ourselves: the only text put into these statements.
            let literal = "'\(athlete.uuidString.lowercased())'"
            // CREATE TABLE … PARTITION OF would lock each parent exclusively and deadlock with other athletes'
            // writes; a new table attached takes only a SHARE UPDATE EXCLUSIVE lock on the parent, which writes
            // to other partitions do not wait for (the parent's indexes are built on the empty table).
            for table in partitionedTables {
                let name = partition(table, athlete: athlete)
                let storage = rewrittenTables[table].map { " WITH (fillfactor = \($0))" } ?? ""
                try transaction.run(
                    "CREATE TABLE \(name) (LIKE \(table) INCLUDING DEFAULTS INCLUDING CONSTRAINTS)\(storage)")
                try transaction.run("ALTER TABLE \(name) ADD CONSTRAINT \(name)_athlete CHECK (athlete = \(literal))")
                try transaction.run("ALTER TABLE \(table) ATTACH PARTITION \(name) FOR VALUES IN (\(literal))")
            }
            var insert = SQL()
            insert.text = "INSERT INTO athlete_partition(athlete) VALUES (\(insert.bind(.uuid(athlete))))"
            try transaction.run(insert)
        }
    }
}
