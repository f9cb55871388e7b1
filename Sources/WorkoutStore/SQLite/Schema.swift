import GRDB

/// The store's schema, as versioned migrations. Never edit a shipped migration: add a new one and
/// raise `Schema.version`.
enum Schema {
    /// The newest schema this build writes; files with a higher `user_version` are refused.
    static let version = 2

    /// The migrations; `path` names the file in a failed migration's error.
    static func migrator(path: String) -> DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in
            try db.execute(
                sql: """
                    CREATE TABLE meta(key TEXT PRIMARY KEY, value INTEGER NOT NULL);
                    INSERT INTO meta(key, value) VALUES ('anchor', 0);
                    CREATE TABLE source(
                        id INTEGER PRIMARY KEY, name TEXT NOT NULL, manufacturer TEXT, model TEXT, identifier TEXT);
                    CREATE UNIQUE INDEX source_identity ON source(
                        name, ifnull(manufacturer, ''), ifnull(model, ''), ifnull(identifier, ''));
                    CREATE TABLE workout(
                        id INTEGER PRIMARY KEY, uuid TEXT NOT NULL UNIQUE, activity_type TEXT NOT NULL,
                        start REAL NOT NULL, "end" REAL NOT NULL, duration REAL NOT NULL, elapsed REAL NOT NULL,
                        configuration TEXT NOT NULL, metadata TEXT NOT NULL, counters TEXT NOT NULL,
                        anchor INTEGER NOT NULL,
                        -- 1 while a journaled session records into this row: its samples and route are
                        -- already here, the rest arrives at finish. Workout queries skip such rows.
                        recording INTEGER NOT NULL DEFAULT 0);
                    CREATE INDEX workout_start ON workout(start);
                    CREATE INDEX workout_anchor ON workout(anchor);
                    CREATE INDEX workout_type_duration ON workout(activity_type, duration);
                    CREATE TABLE activity(
                        id INTEGER PRIMARY KEY, uuid TEXT NOT NULL,
                        workout_id INTEGER NOT NULL REFERENCES workout(id) ON DELETE CASCADE,
                        position INTEGER NOT NULL, implicit INTEGER NOT NULL, activity_type TEXT NOT NULL,
                        start REAL NOT NULL, "end" REAL, duration REAL NOT NULL, configuration TEXT NOT NULL,
                        metadata TEXT NOT NULL);
                    CREATE INDEX activity_workout ON activity(workout_id);
                    CREATE TABLE statistic(
                        workout_id INTEGER NOT NULL REFERENCES workout(id) ON DELETE CASCADE,
                        activity_id INTEGER REFERENCES activity(id) ON DELETE CASCADE,
                        activity_type TEXT NOT NULL, quantity_type TEXT NOT NULL,
                        minimum REAL, maximum REAL, average REAL, sum REAL, most_recent REAL, most_recent_date REAL,
                        start REAL NOT NULL, "end" REAL NOT NULL, duration REAL NOT NULL, covered REAL NOT NULL,
                        sample_count INTEGER NOT NULL,
                        -- The workout's start and id, copied so that activity queries are answered from
                        -- one covering index without touching the workout table.
                        workout_start REAL NOT NULL, workout_uuid TEXT NOT NULL);
                    CREATE INDEX statistic_workout ON statistic(workout_id);
                    CREATE INDEX statistic_activity ON statistic(activity_id, quantity_type);
                    CREATE INDEX statistic_average ON statistic(
                        quantity_type, activity_type, average, workout_start, workout_uuid, workout_id, activity_id)
                        WHERE activity_id IS NOT NULL;
                    CREATE INDEX statistic_minimum ON statistic(
                        quantity_type, activity_type, minimum, workout_start, workout_uuid, workout_id, activity_id)
                        WHERE activity_id IS NOT NULL;
                    CREATE INDEX statistic_maximum ON statistic(
                        quantity_type, activity_type, maximum, workout_start, workout_uuid, workout_id, activity_id)
                        WHERE activity_id IS NOT NULL;
                    CREATE INDEX statistic_sum ON statistic(
                        quantity_type, activity_type, sum, workout_start, workout_uuid, workout_id, activity_id)
                        WHERE activity_id IS NOT NULL;
                    CREATE TABLE event(
                        workout_id INTEGER NOT NULL REFERENCES workout(id) ON DELETE CASCADE,
                        position INTEGER NOT NULL, type TEXT NOT NULL, start REAL NOT NULL, duration REAL NOT NULL,
                        metadata TEXT NOT NULL);
                    CREATE INDEX event_workout ON event(workout_id);
                    CREATE TABLE sample(
                        id INTEGER PRIMARY KEY, workout_id INTEGER NOT NULL, type TEXT NOT NULL,
                        start REAL NOT NULL, "end" REAL NOT NULL, value REAL NOT NULL, unit TEXT NOT NULL,
                        canonical REAL NOT NULL, source_id INTEGER NOT NULL, metadata TEXT);
                    CREATE INDEX sample_type_start ON sample(type, start);
                    CREATE INDEX sample_workout ON sample(workout_id);
                    CREATE TABLE route_point(
                        workout_id INTEGER NOT NULL, date REAL NOT NULL, latitude REAL NOT NULL,
                        longitude REAL NOT NULL, altitude REAL, speed REAL, course REAL, horizontal_accuracy REAL);
                    CREATE INDEX route_workout ON route_point(workout_id);
                    CREATE TABLE deleted_object(anchor INTEGER PRIMARY KEY, kind TEXT NOT NULL, uuid TEXT NOT NULL);
                    CREATE TABLE journal_session(
                        uuid TEXT PRIMARY KEY, configuration TEXT NOT NULL, options TEXT NOT NULL,
                        created REAL NOT NULL, workout_id INTEGER NOT NULL);
                    -- The session's changes in order. Samples and route points are written once, into
                    -- `sample` and `route_point` of the session's workout row; a change names their
                    -- row ids (first_row ..< first_row + row_count).
                    CREATE TABLE journal_change(
                        session TEXT NOT NULL, seq INTEGER NOT NULL, kind TEXT NOT NULL, payload BLOB,
                        first_row INTEGER, row_count INTEGER,
                        PRIMARY KEY(session, seq)) WITHOUT ROWID;
                    """)
        }
        // v2: samples and route points in chunks (docs/storage-chunks.md). One transaction: on any
        // failure it rolls back and the file stays as it was.
        migrator.registerMigration("v2") { db in
            do {
                try db.execute(sql: chunkTables)
                try ChunkMigration.run(db)
                try db.execute(
                    sql: """
                        DROP TABLE sample;
                        DROP TABLE route_point;
                        PRAGMA user_version = 2;
                        """)
            } catch let error as StoreError {
                throw error
            } catch {
                throw StoreError.migrationFailed(path: path, detail: String(describing: error))
            }
        }
        return migrator
    }

    /// The statistics' four value indexes of schema v1 (the activity queries' covering indexes), by name, each
    /// statement as v1 made it but with `IF NOT EXISTS`: a bulk load (`SQLiteBackend.beginBulkLoad`) drops them and
    /// makes them again at its end, and opening a store makes any that are missing (a bulk load cut short).
    static let statisticValueIndexes: [(name: String, sql: String)] = ["average", "minimum", "maximum", "sum"].map {
        (
            "statistic_\($0)",
            """
            CREATE INDEX IF NOT EXISTS statistic_\($0) ON statistic(
                quantity_type, activity_type, \($0), workout_start, workout_uuid, workout_id, activity_id)
                WHERE activity_id IS NOT NULL
            """
        )
    }

    /// The chunk tables of schema v2. A chunk's key is (workout_id, first_ordinal): writing a chunk
    /// again with the same key replaces it (the open tail of a recording's stream).
    static let chunkTables = """
        CREATE TABLE sample_chunk(
            id INTEGER PRIMARY KEY, workout_id INTEGER NOT NULL, type TEXT NOT NULL, source_id INTEGER NOT NULL,
            first_ordinal INTEGER NOT NULL, last_ordinal INTEGER NOT NULL, count INTEGER NOT NULL,
            start_min REAL NOT NULL, start_max REAL NOT NULL, end_min REAL NOT NULL, end_max REAL NOT NULL,
            value_min REAL, value_max REAL, data BLOB NOT NULL);
        CREATE UNIQUE INDEX sample_chunk_key ON sample_chunk(workout_id, first_ordinal);
        CREATE INDEX sample_chunk_type_start ON sample_chunk(type, start_min);
        CREATE TABLE route_chunk(
            id INTEGER PRIMARY KEY, workout_id INTEGER NOT NULL, first_ordinal INTEGER NOT NULL,
            last_ordinal INTEGER NOT NULL, count INTEGER NOT NULL, date_min REAL NOT NULL, date_max REAL NOT NULL,
            data BLOB NOT NULL);
        CREATE UNIQUE INDEX route_chunk_key ON route_chunk(workout_id, first_ordinal);
        """
}
