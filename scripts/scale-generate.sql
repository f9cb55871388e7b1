-- The scale generator of issue 12: :athletes athletes × :workouts workouts each, in a PostgreSQL database
-- already migrated by `workout serve --db URL` (scripts/scale-bench.sh runs it). Athletes are grouped in
-- teams of 50 (team_N). Each workout has one implicit activity (cycling, running or swimming in turn) with
-- heart-rate statistics (averages spread evenly over 100…180 bpm), as the server's imports write them.
-- Rows only: no sample chunks (the query under test reads the statistics index alone).
\set ON_ERROR_STOP on
SET synchronous_commit = off;
-- psql does not expand variables inside DO blocks: pass them as settings.
SELECT set_config('scale.athletes', :'athletes', false), set_config('scale.workouts', :'workouts', false) \gset

DO $$
<<generate>>
DECLARE
    a integer;
    athlete uuid;
    suffix text;
    t text;
BEGIN
    FOR a IN 1..current_setting('scale.athletes')::integer LOOP
        athlete := md5('scale-athlete-' || a)::uuid;
        CONTINUE WHEN EXISTS (SELECT 1 FROM athlete_partition p WHERE p.athlete = generate.athlete);
        suffix := replace(athlete::text, '-', '');
        FOREACH t IN ARRAY ARRAY['workout', 'activity', 'statistic', 'event', 'sample_chunk', 'route_chunk',
                                 'deleted_object', 'journal_session', 'journal_change'] LOOP
            EXECUTE format('CREATE TABLE %I (LIKE %I INCLUDING DEFAULTS INCLUDING CONSTRAINTS)', t || '_' || suffix, t);
            EXECUTE format('ALTER TABLE %I ADD CONSTRAINT %I CHECK (athlete = %L)', t || '_' || suffix,
                           t || '_' || suffix || '_athlete', athlete);
            EXECUTE format('ALTER TABLE %I ATTACH PARTITION %I FOR VALUES IN (%L)', t, t || '_' || suffix, athlete);
        END LOOP;
        INSERT INTO athlete_partition(athlete, anchor) VALUES (athlete, current_setting('scale.workouts')::bigint);
        COMMIT;  -- one athlete's nine partitions a transaction: a lock for each table would overflow the lock table
    END LOOP;
END $$;

-- Workouts: one a day per athlete from 2020-01-01 (seconds since 2001-01-01), an hour long.
CREATE TEMP TABLE gen AS
SELECT md5('scale-athlete-' || a)::uuid AS athlete, a, w,
       nextval('workout_row_seq') AS row_id,
       md5('scale-workout-' || a || '-' || w)::uuid AS uuid,
       (ARRAY['cycling', 'running', 'swimming'])[1 + (a + w) % 3] AS activity_type,
       599616000 + w * 86400.0 AS start,
       100 + ((a * 7919 + w * 104729) % 8001) / 100.0 AS average
FROM generate_series(1, :athletes) a, generate_series(1, :workouts) w;

INSERT INTO workout(athlete, row_id, uuid, activity_type, start, "end", duration, elapsed, configuration,
                    metadata, counters, anchor)
SELECT athlete, row_id, uuid, activity_type, start, start + 3600, 3600, 3600,
       '{"activityType":"' || activity_type || '","locationType":"outdoor","swimmingLocationType":"unknown"}',
       '{}', '{"accepted":3600,"dropped":{}}', w
FROM gen;

INSERT INTO activity(athlete, row_id, uuid, workout_row, position, implicit, activity_type, start, "end",
                     duration, configuration, metadata)
SELECT athlete, row_id, uuid, row_id, 0, true, activity_type, start, start + 3600, 3600,
       '{"activityType":"' || activity_type || '","locationType":"outdoor","swimmingLocationType":"unknown"}', '{}'
FROM gen;

-- The workout's own statistics row (activity_row NULL) and the implicit activity's (activity_row = its row).
INSERT INTO statistic(athlete, workout_row, activity_row, activity_type, quantity_type, minimum, maximum, average,
                      sum, most_recent, most_recent_date, start, "end", duration, covered, sample_count,
                      workout_start, workout_uuid)
SELECT athlete, row_id, activity_row, activity_type, 'heartRate', average - 30, average + 25, average, NULL,
       average, start + 3600, start, start + 3600, 3600, 3600, 3600, start, uuid
FROM gen, (VALUES (NULL::bigint), (0)) v(k), LATERAL (SELECT CASE WHEN v.k IS NULL THEN NULL ELSE gen.row_id END AS activity_row) r;

-- The activity's statistics again in the teams' table (schema migration 2), as the backend writes them.
INSERT INTO team_statistic(athlete, workout_row, activity_row, activity_type, quantity_type, minimum, maximum, average,
                           sum, workout_start, workout_uuid)
SELECT athlete, row_id, row_id, activity_type, 'heartRate', average - 30, average + 25, average, NULL, start, uuid
FROM gen;

-- As autovacuum would in time: the visibility map lets the team query read its index alone.
VACUUM team_statistic;
ANALYZE;
SELECT count(*) AS workouts FROM workout;
SELECT setval('activity_row_seq', greatest((SELECT last_value FROM activity_row_seq), (SELECT max(row_id) FROM activity)));
