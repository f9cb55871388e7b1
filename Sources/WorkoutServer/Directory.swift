import Crypto
import Foundation
import Synchronization
import GRDB
import WorkoutStore
import WorkoutStorePostgres

/// An athlete known to the server: every workout belongs to one.
public struct Athlete: Sendable, Hashable, Codable {
    public var id: UUID
    /// Unique; letters, digits, `.`, `_`, `-` (1…64).
    public var name: String
    /// The team a coach token may read, if any.
    public var team: String?
}

/// Who a request's token speaks for.
enum Principal: Sendable, Hashable {
    /// Reads and writes this athlete's data only.
    case athlete(Athlete)
    /// Reads the data of every athlete of the team; writes nothing.
    case coach(team: String)
}

/// Why setting up the server's directory (athletes, tokens) failed; each says what to do.
public enum ServerSetupError: Error, Sendable, Equatable, CustomStringConvertible {
    case invalidName(String)
    case athleteExists(String)
    case athleteNotFound(String)
    case teamNotFound(String)
    case storage(path: String, detail: String)

    public var description: String {
        switch self {
        case .invalidName(let name):
            "'\(name)' is not a valid name: use 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit"
        case .athleteExists(let name): "an athlete named '\(name)' already exists; choose another name"
        case .athleteNotFound(let name): "no athlete named '\(name)'; add one with `workout athletes add \(name)`"
        case .teamNotFound(let team):
            "no athlete is in team '\(team)'; add athletes with `workout athletes add NAME --team \(team)` first"
        case .storage(let path, let detail): "\(path): \(detail)"
        }
    }
}

/// API tokens: `wk_` and 32 base64url characters (24 random bytes, 192 bits). Only their SHA-256 is stored.
enum Tokens {
    static let prefix = "wk_"
    static let bodyLength = 32

    static func generate() -> String {
        var generator = SystemRandomNumberGenerator()  // getrandom(2): cryptographically secure
        let bytes = (0..<24).map { _ in UInt8.random(in: 0...255, using: &generator) }
        let body = Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
        return prefix + body
    }

    /// Whether `token` has the shape of one of ours (checked before any lookup).
    static func isWellFormed(_ token: String) -> Bool {
        guard token.hasPrefix(prefix), token.utf8.count == prefix.utf8.count + bodyLength else { return false }
        return token.utf8.dropFirst(prefix.utf8.count).allSatisfy { byte in
            (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                || byte == 0x2D || byte == 0x5F
        }
    }

    static func hash(_ token: String) -> String { hash(Array(token.utf8)) }

    /// SHA-256 in lowercase hex.
    static func hash(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var hex: [UInt8] = []
        hex.reserveCapacity(64)
        for byte in SHA256.hash(data: bytes) {
            hex.append(digits[Int(byte >> 4)])
            hex.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: hex, as: UTF8.self)
    }
}

/// Tokens a server has looked up in its directory recently, by `Tokens.hash`: who they speak for, until `lifetime`
/// after the lookup.
///
/// Every request carries a token; without this each would be a directory query (a PostgreSQL round trip). Only
/// known tokens are kept (an unknown one is looked up again, so a token issued a moment ago works at once), and
/// a token revoked while kept is refused once its lifetime has passed. At most `capacity` tokens: when full,
/// the expired ones go, and all of them when none has expired.
///
/// Requests seldom wait for the directory: a token used in the second half of its lifetime is answered from the
/// cache while one lookup refreshes it in the background, and requests that find a token missing while it is
/// being looked up wait for that lookup instead of making their own (a thousand recorders of two hundred
/// athletes starting at once make two hundred lookups, not a thousand). Neither changes when a revoked token is
/// refused: an answer is still trusted only until `lifetime` after its lookup began. With a lifetime of 0
/// every request looks its token up itself.
final class TokenCache: Sendable {
    static let capacity = 100_000
    let lifetime: Duration
    private let entries = Mutex<[String: (principal: Principal, until: ContinuousClock.Instant)]>([:])
    /// A lookup's answer and when it began (the answer is trusted until `lifetime` after that).
    typealias Answer = (result: Result<Principal?, APIError>, asked: ContinuousClock.Instant)
    /// The lookups running now, by token hash (each shared by the requests that wait for them), with when they
    /// began: one running longer than `staleLookup` is no longer joined (a new one starts beside it).
    private let lookups = Mutex<[String: (task: Task<Answer, Never>, began: ContinuousClock.Instant)]>([:])
    /// How long a running lookup is joined by new requests.
    static let staleLookup: Duration = .seconds(10)

    /// The time (`ContinuousClock.now`; tests give a clock they move themselves).
    let now: @Sendable () -> ContinuousClock.Instant

    /// `lifetime` in seconds, at most an hour (0, negative or not a number: nothing is kept).
    init(lifetime: TimeInterval, now: @escaping @Sendable () -> ContinuousClock.Instant = { ContinuousClock.now }) {
        let seconds = lifetime.isFinite ? min(max(0, lifetime), 3600) : 0
        self.lifetime = .nanoseconds(Int64((seconds * 1e9).rounded()))
        self.now = now
    }

    /// Who the token speaks for: from the cache when looked up less than `lifetime` ago, else from `lookUp` (the
    /// directory), run once for all the requests that ask meanwhile. nil: unknown or revoked.
    func principal(
        hash: String, lookUp: @escaping @Sendable () async throws(APIError) -> Principal?
    ) async throws(APIError) -> Principal? {
        guard lifetime > .zero else { return try await lookUp() }
        if let (principal, refresh) = cached(hash: hash) {
            if refresh { _ = running(hash: hash, lookUp: lookUp) }
            return principal
        }
        let answer = await running(hash: hash, lookUp: lookUp).value
        // A shared answer is trusted as a cached one is: until `lifetime` after its lookup began. One that came
        // back later than that (the machine was slow) is not: this request asks again, alone.
        guard now() < answer.asked + lifetime else { return try await lookUp() }
        return try answer.result.get()
    }

    /// The cached principal of `hash` and whether its lookup is in the second half of its lifetime.
    func cached(hash: String) -> (Principal, refresh: Bool)? {
        guard lifetime > .zero else { return nil }
        let now = self.now()
        return entries.withLock { entries in
            guard let entry = entries[hash] else { return nil }
            guard entry.until > now else {
                entries[hash] = nil
                return nil
            }
            return (entry.principal, entry.until - now < lifetime / 2)
        }
    }

    /// The lookup of `hash` running now, started when there is none (or the one running began more than
    /// `staleLookup` ago: a lookup stuck on a dead connection does not hold up later requests); it keeps its
    /// answer and then leaves.
    private func running(
        hash: String, lookUp: @escaping @Sendable () async throws(APIError) -> Principal?
    ) -> Task<Answer, Never> {
        lookups.withLock { lookups in
            let now = self.now()
            if let running = lookups[hash], now - running.began < Self.staleLookup { return running.task }
            // The task may start on another thread at once, but its removal below takes this lock, so it finds
            // the entry added here (and removes only its own: a newer one started beside a stuck one stays).
            let task = Task { () -> Answer in
                let asked = self.now()
                let result: Result<Principal?, APIError>
                do throws(APIError) {
                    result = .success(try await lookUp())
                } catch {
                    result = .failure(error)
                }
                if case .success(let principal) = result { self.remember(principal, hash: hash, asked: asked) }
                self.lookups.withLock { lookups in
                    if lookups[hash]?.began == now { lookups[hash] = nil }
                }
                return (result, asked)
            }
            lookups[hash] = (task, now)
            return task
        }
    }

    /// Keeps what a lookup that started at `asked` found, until `asked + lifetime`; a token it did not find
    /// (unknown or revoked) is dropped.
    func remember(_ principal: Principal?, hash: String, asked: ContinuousClock.Instant) {
        guard lifetime > .zero else { return }
        let now = self.now()
        guard let principal, asked + lifetime > now else {
            entries.withLock { $0[hash] = nil }
            return
        }
        entries.withLock { entries in
            if entries.count >= Self.capacity {
                entries = entries.filter { $0.value.until > now }
                if entries.count >= Self.capacity { entries.removeAll() }
            }
            entries[hash] = (principal, asked + lifetime)
        }
    }
}

/// The server's directory of athletes, teams and token hashes (and live sessions' owners).
///
/// With SQLite stores it is a SQLite file in the data folder (`directory.sqlite`); with a PostgreSQL `--db`
/// its tables live in that database (migrations in table `directory_migration`), so that several servers on
/// one database share it and a server keeps nothing of its own but uploads in progress. Several processes may
/// use it at once (servers and `workout athletes …`): every call is one transaction, nothing is cached.
public final class ServerDirectory: Sendable {
    /// Where the directory is (a file or the redacted database URL), for messages.
    public let location: String
    let storage: Storage

    enum Storage: Sendable {
        case sqlite(DatabaseQueue)
        case postgres(PostgresWorkoutDatabase)
    }

    /// A warning when the data folder (it, `athletes/`, `uploads/`, the directory's and the athletes' SQLite
    /// files) can be read by other users, with the command that makes it private; nil when it is private.
    ///
    /// Check before opening the directory (an open SQLite file has WAL files that go away on close). A new
    /// data folder is created private (0700 folders, 0600 files); an existing one is never chmodded.
    public static func permissionWarning(folder: String) -> String? {
        func inside(_ name: String) -> String { (folder as NSString).appendingPathComponent(name) }
        let directory = inside("directory.sqlite")
        var files = [directory, directory + "-wal", directory + "-shm", directory + "-journal"]
        let athletes = inside("athletes")
        let stores = (try? FileManager.default.contentsOfDirectory(atPath: athletes)) ?? []
        files += stores.filter { $0.contains(".sqlite") }.sorted().map { (athletes as NSString).appendingPathComponent($0) }
        return StoreFiles.permissionWarning(
            subject: "the server's data folder", files: files, folders: [folder, athletes, inside("uploads")])
    }

    /// Opens (creating when missing) the SQLite directory in `folder`.
    public init(folder: String) throws(ServerSetupError) {
        let path = (folder as NSString).appendingPathComponent("directory.sqlite")
        location = path
        do throws(StoreError) {
            // The folder 0700 and the file 0600 before SQLite opens it (its WAL files get the file's mode).
            try StoreFiles.createPrivate(path: path)
        } catch {
            throw .storage(path: path, detail: error.description)
        }
        do {
            for name in ["athletes", "uploads"] {
                try FileManager.default.createDirectory(
                    atPath: (folder as NSString).appendingPathComponent(name), withIntermediateDirectories: true,
                    attributes: [.posixPermissions: StoreFiles.folderMode])
            }
            var configuration = Configuration()
            configuration.busyMode = .timeout(5)
            configuration.foreignKeysEnabled = true
            let queue = try DatabaseQueue(path: path, configuration: configuration)
            var migrator = DatabaseMigrator()
            migrator.registerMigration("v1") { db in
                try db.execute(
                    sql: """
                        CREATE TABLE athlete(
                            id TEXT PRIMARY KEY, name TEXT NOT NULL UNIQUE, team TEXT, created REAL NOT NULL);
                        CREATE INDEX athlete_team ON athlete(team);
                        CREATE TABLE token(
                            hash TEXT PRIMARY KEY,
                            athlete_id TEXT REFERENCES athlete(id) ON DELETE CASCADE,
                            team TEXT,
                            created REAL NOT NULL,
                            CHECK ((athlete_id IS NULL) <> (team IS NULL)));
                        """)
            }
            migrator.registerMigration("v2: live sessions' owners") { db in
                try db.execute(
                    sql: """
                        CREATE TABLE live_session(
                            id TEXT PRIMARY KEY, athlete_id TEXT NOT NULL REFERENCES athlete(id) ON DELETE CASCADE);
                        """)
            }
            try migrator.migrate(queue)
            storage = .sqlite(queue)
        } catch {
            throw .storage(path: path, detail: "cannot open the server directory (\(error))")
        }
    }

    /// The PostgreSQL directory's migrations, by version (never edit a shipped one: add the next). The same
    /// tables and constraints as the SQLite directory's.
    static let postgresMigrations: [Int: [String]] = [
        1: [
            "CREATE TABLE athlete(id text PRIMARY KEY, name text NOT NULL UNIQUE, team text, created double precision NOT NULL)",
            "CREATE INDEX athlete_team ON athlete(team)",
            """
            CREATE TABLE token(
                hash text PRIMARY KEY, athlete_id text REFERENCES athlete(id) ON DELETE CASCADE, team text,
                created double precision NOT NULL, CHECK ((athlete_id IS NULL) <> (team IS NULL)))
            """,
            """
            CREATE TABLE live_session(
                id text PRIMARY KEY, athlete_id text NOT NULL REFERENCES athlete(id) ON DELETE CASCADE)
            """,
        ]
    ]

    /// Opens the directory in a PostgreSQL database (the workouts' database), creating or migrating its tables.
    public convenience init(postgresURL: String, poolSize: Int = 2) throws(ServerSetupError) {
        let database: PostgresWorkoutDatabase
        do {
            database = try PostgresWorkoutDatabase(url: postgresURL, poolSize: poolSize)
        } catch {
            throw .storage(path: "PostgreSQL", detail: "\(error)")
        }
        try self.init(database: database)
    }

    /// Opens the directory in `database`, creating or migrating its tables (under an advisory lock: several
    /// servers may start at once); a directory of a newer version is refused.
    init(database: PostgresWorkoutDatabase) throws(ServerSetupError) {
        location = database.location
        storage = .postgres(database)
        let latest = Self.postgresMigrations.keys.max() ?? 0
        try perform { db in
            try db.rows("SELECT pg_advisory_xact_lock(7308521)")
            try db.rows(
                "CREATE TABLE IF NOT EXISTS directory_migration(version integer PRIMARY KEY, applied timestamptz NOT NULL DEFAULT now())"
            )
            let current: Int64
            if case .int(let version) = try db.rows("SELECT coalesce(max(version), 0) FROM directory_migration").first?.first {
                current = version
            } else {
                current = 0
            }
            if current > Int64(latest) {
                throw ServerSetupError.storage(
                    path: database.location,
                    detail: "the server directory is of version \(current), newer than this program's \(latest); "
                        + "run a newer `workout`")
            }
            for version in (Int(current) + 1)..<(latest + 1) {
                for statement in Self.postgresMigrations[version] ?? [] { try db.rows(statement) }
                try db.rows("INSERT INTO directory_migration(version) VALUES (?)", [.int(Int64(version))])
            }
        }
    }

    static func validName(_ name: String) -> Bool {
        guard let first = name.utf8.first, name.utf8.count <= 64 else { return false }
        func allowed(_ byte: UInt8) -> Bool {
            (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
        }
        return allowed(first) && name.utf8.allSatisfy { allowed($0) || $0 == 0x2E || $0 == 0x5F || $0 == 0x2D }
    }

    /// Runs `body` in one transaction of the directory's database (SQLite or PostgreSQL: the statements are
    /// written for both, with `?` placeholders). `single`: `body` is one statement, which PostgreSQL runs
    /// without BEGIN and COMMIT when it reads, and committed by a COMMIT sent with it when it writes.
    private func perform<T>(
        readOnly: Bool = false, single: Bool = false, _ body: (any DirectoryStatements) throws -> T
    ) throws(ServerSetupError) -> T {
        do {
            switch storage {
            case .sqlite(let queue):
                if readOnly { return try queue.read { db in try body(SQLiteStatements(db: db)) } }
                return try queue.write { db in try body(SQLiteStatements(db: db)) }
            case .postgres(let database):
                return try database.transaction(readOnly: readOnly, single: single) { db in try body(db) }
            }
        } catch let error as ServerSetupError {
            throw error
        } catch {
            throw .storage(path: location, detail: "directory: \(error)")
        }
    }

    private static var now: SQLValue { .double(Date().timeIntervalSince1970) }

    /// Adds an athlete (in `team` when given) and returns it with a new token for it; in a PostgreSQL
    /// directory, the athlete's partitions are created too.
    public func addAthlete(name: String, team: String? = nil) throws(ServerSetupError) -> (Athlete, token: String) {
        guard Self.validName(name) else { throw .invalidName(name) }
        if let team, !Self.validName(team) { throw .invalidName(team) }
        let athlete = Athlete(id: UUID(), name: name, team: team)
        let token = Tokens.generate()
        try perform { db in
            if try !db.rows("SELECT 1 FROM athlete WHERE name = ?", [.text(name)]).isEmpty {
                throw ServerSetupError.athleteExists(name)
            }
            try db.rows(
                "INSERT INTO athlete(id, name, team, created) VALUES (?, ?, ?, ?)",
                [.text(athlete.id.uuidString), .text(name), team.map(SQLValue.text) ?? .null, Self.now])
            try db.rows(
                "INSERT INTO token(hash, athlete_id, created) VALUES (?, ?, ?)",
                [.text(Tokens.hash(token)), .text(athlete.id.uuidString), Self.now])
        }
        // The athlete's partitions now, once, rather than on its first request (a server meeting hundreds of new
        // athletes at once would create them all while their first sessions wait). Should this fail, the
        // athlete is added all the same: the server creates them on first use.
        if case .postgres(let database) = storage { _ = try? database.store(athlete: athlete.id) }
        return (athlete, token)
    }

    /// A new token for an existing athlete (the old ones stay valid until revoked).
    public func issueToken(athlete name: String) throws(ServerSetupError) -> String {
        let token = Tokens.generate()
        try perform { db in
            guard let id = try db.rows("SELECT id FROM athlete WHERE name = ?", [.text(name)]).first?.first?.text
            else { throw ServerSetupError.athleteNotFound(name) }
            try db.rows(
                "INSERT INTO token(hash, athlete_id, created) VALUES (?, ?, ?)", [.text(Tokens.hash(token)), .text(id), Self.now])
        }
        return token
    }

    /// A new coach token: reads every athlete of `team`, writes nothing.
    public func issueCoachToken(team: String) throws(ServerSetupError) -> String {
        guard Self.validName(team) else { throw .invalidName(team) }
        let token = Tokens.generate()
        try perform { db in
            guard try !db.rows("SELECT 1 FROM athlete WHERE team = ?", [.text(team)]).isEmpty
            else { throw ServerSetupError.teamNotFound(team) }
            try db.rows(
                "INSERT INTO token(hash, team, created) VALUES (?, ?, ?)", [.text(Tokens.hash(token)), .text(team), Self.now])
        }
        return token
    }

    /// Revokes every token of an athlete.
    public func revokeTokens(athlete name: String) throws(ServerSetupError) {
        try perform { db in
            guard let id = try db.rows("SELECT id FROM athlete WHERE name = ?", [.text(name)]).first?.first?.text
            else { throw ServerSetupError.athleteNotFound(name) }
            try db.rows("DELETE FROM token WHERE athlete_id = ?", [.text(id)])
        }
    }

    /// Every athlete, by name.
    public func athletes() throws(ServerSetupError) -> [Athlete] {
        try perform(readOnly: true) { db in
            try db.rows("SELECT id, name, team FROM athlete ORDER BY name").compactMap(Self.athlete)
        }
    }

    /// The athletes of a team, by name.
    func athletes(team: String) throws(ServerSetupError) -> [Athlete] {
        try perform(readOnly: true) { db in
            try db.rows("SELECT id, name, team FROM athlete WHERE team = ? ORDER BY name", [.text(team)])
                .compactMap(Self.athlete)
        }
    }

    func athlete(named name: String) throws(ServerSetupError) -> Athlete? {
        try perform(readOnly: true) { db in
            try db.rows("SELECT id, name, team FROM athlete WHERE name = ?", [.text(name)]).first.flatMap(Self.athlete)
        }
    }

    /// Who the token whose `Tokens.hash` is `hash` speaks for; nil for an unknown or revoked token.
    func principal(hash: String) throws(ServerSetupError) -> Principal? {
        try perform(readOnly: true, single: true) { db -> Principal? in
            let rows = try db.rows(
                """
                SELECT token.team, athlete.id, athlete.name, athlete.team FROM token
                LEFT JOIN athlete ON athlete.id = token.athlete_id WHERE token.hash = ?
                """, [.text(hash)])
            guard let row = rows.first, row.count == 4 else { return nil }
            if let team = row[0].text { return .coach(team: team) }
            return Self.athlete(Array(row[1...])).map(Principal.athlete)
        }
    }

    /// An athlete from a row of (id, name, team).
    private static func athlete(_ row: [SQLValue]) -> Athlete? {
        guard row.count == 3, let id = row[0].text.flatMap(UUID.init(uuidString:)), let name = row[1].text else { return nil }
        return Athlete(id: id, name: name, team: row[2].text)
    }

    /// Claims live session `id` for `athlete` when no athlete has it: its owner, and whether this call claimed it.
    ///
    /// A new id (most opens) costs one statement: the row it inserted is the answer (`INSERT … RETURNING`:
    /// SQLite 3.35 or later). An id already claimed is read back (on PostgreSQL, an insert meeting a claim not
    /// yet committed waits for it, so the owner read after it is that claim's).
    func claimSession(_ id: UUID, athlete: Athlete) throws(ServerSetupError) -> SessionClaim {
        let inserted = try perform(single: true) { db in
            try db.rows(
                "INSERT INTO live_session(id, athlete_id) VALUES (?, ?) ON CONFLICT(id) DO NOTHING RETURNING athlete_id",
                [.text(id.uuidString), .text(athlete.id.uuidString)])
        }
        if !inserted.isEmpty { return SessionClaim(owner: athlete.id, isNew: true) }
        guard let owner = try sessionOwner(id) else {
            // Claimed and gone again at once: its athlete was deleted meanwhile.
            throw .storage(path: location, detail: "live session \(id) was claimed and removed at the same time; open it again")
        }
        return SessionClaim(owner: owner, isNew: false)
    }

    /// The owner of live session `id`, if any athlete opened it.
    func sessionOwner(_ id: UUID) throws(ServerSetupError) -> UUID? {
        try perform(readOnly: true, single: true) { db in
            try db.rows("SELECT athlete_id FROM live_session WHERE id = ?", [.text(id.uuidString)])
                .first?.first?.text.flatMap(UUID.init(uuidString:))
        }
    }

    /// Whether the directory answers (readiness).
    func ping() -> Bool {
        (try? perform(readOnly: true) { db in try db.rows("SELECT 1") }) != nil
    }
}

/// Who holds a live session id (`ServerDirectory.claimSession`).
struct SessionClaim: Sendable {
    var owner: UUID
    /// Whether the claim that answered made the id this athlete's: no live session of a server on this
    /// directory opened it before (a journal may still hold it, begun otherwise: the open checks on a refused
    /// begin).
    var isNew: Bool
}

/// Plain statements with `?` placeholders, as both directory databases run them.
protocol DirectoryStatements {
    @discardableResult
    func rows(_ sql: String, _ values: [SQLValue]) throws -> [[SQLValue]]
}

extension DirectoryStatements {
    @discardableResult
    func rows(_ sql: String) throws -> [[SQLValue]] { try rows(sql, []) }
}

extension PostgresStatements: DirectoryStatements {}

/// The SQLite directory's statements (GRDB stays inside this file and the SQLite stores).
struct SQLiteStatements: DirectoryStatements {
    let db: Database

    func rows(_ sql: String, _ values: [SQLValue]) throws -> [[SQLValue]] {
        let arguments = StatementArguments(
            values.map { value -> (any DatabaseValueConvertible)? in
                switch value {
                case .null: nil
                case .text(let text): text
                case .int(let number): number
                case .double(let number): number
                }
            })
        return try Row.fetchAll(db, sql: sql, arguments: arguments).map { row in
            row.databaseValues.map { value in
                switch value.storage {
                case .null: .null
                case .int64(let number): .int(number)
                case .double(let number): .double(number)
                case .string(let text): .text(text)
                case .blob(let data): .text(String(decoding: data, as: UTF8.self))
                }
            }
        }
    }
}
