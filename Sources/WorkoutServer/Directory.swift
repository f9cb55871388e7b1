import Crypto
import Foundation
import GRDB
import WorkoutStore

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

    /// SHA-256 in hex.
    static func hash(_ bytes: [UInt8]) -> String {
        SHA256.hash(data: bytes).map { String(format: "%02x", $0) }.joined()
    }
}

/// The server's directory of athletes, teams and token hashes: a SQLite file beside the athletes' stores.
///
/// Several processes may use it at once (the server and `workout athletes add`): every call is a transaction.
public final class ServerDirectory: Sendable {
    /// The server's data folder.
    public let folder: String
    let queue: DatabaseQueue

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

    /// Opens (creating when missing) the directory in `folder`.
    public init(folder: String) throws(ServerSetupError) {
        self.folder = folder
        let path = (folder as NSString).appendingPathComponent("directory.sqlite")
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
            queue = try DatabaseQueue(path: path, configuration: configuration)
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
        } catch {
            throw .storage(path: path, detail: "cannot open the server directory (\(error))")
        }
    }

    static func validName(_ name: String) -> Bool {
        guard let first = name.utf8.first, name.utf8.count <= 64 else { return false }
        func allowed(_ byte: UInt8) -> Bool {
            (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
        }
        return allowed(first) && name.utf8.allSatisfy { allowed($0) || $0 == 0x2E || $0 == 0x5F || $0 == 0x2D }
    }

    private func perform<T>(_ body: (Database) throws -> T) throws(ServerSetupError) -> T {
        do {
            return try queue.write(body)
        } catch let error as ServerSetupError {
            throw error
        } catch {
            throw .storage(path: folder, detail: "directory: \(error)")
        }
    }

    /// Adds an athlete (in `team` when given) and returns it with a new token for it.
    public func addAthlete(name: String, team: String? = nil) throws(ServerSetupError) -> (Athlete, token: String) {
        guard Self.validName(name) else { throw .invalidName(name) }
        if let team, !Self.validName(team) { throw .invalidName(team) }
        let athlete = Athlete(id: UUID(), name: name, team: team)
        let token = Tokens.generate()
        try perform { db in
            if try Bool.fetchOne(db, sql: "SELECT 1 FROM athlete WHERE name = ?", arguments: [name]) == true {
                throw ServerSetupError.athleteExists(name)
            }
            try db.execute(
                sql: "INSERT INTO athlete(id, name, team, created) VALUES (?, ?, ?, ?)",
                arguments: [athlete.id.uuidString, name, team, Date().timeIntervalSince1970])
            try db.execute(
                sql: "INSERT INTO token(hash, athlete_id, created) VALUES (?, ?, ?)",
                arguments: [Tokens.hash(token), athlete.id.uuidString, Date().timeIntervalSince1970])
        }
        return (athlete, token)
    }

    /// A new token for an existing athlete (the old ones stay valid until revoked).
    public func issueToken(athlete name: String) throws(ServerSetupError) -> String {
        let token = Tokens.generate()
        try perform { db in
            guard let id = try String.fetchOne(db, sql: "SELECT id FROM athlete WHERE name = ?", arguments: [name])
            else { throw ServerSetupError.athleteNotFound(name) }
            try db.execute(
                sql: "INSERT INTO token(hash, athlete_id, created) VALUES (?, ?, ?)",
                arguments: [Tokens.hash(token), id, Date().timeIntervalSince1970])
        }
        return token
    }

    /// A new coach token: reads every athlete of `team`, writes nothing.
    public func issueCoachToken(team: String) throws(ServerSetupError) -> String {
        guard Self.validName(team) else { throw .invalidName(team) }
        let token = Tokens.generate()
        try perform { db in
            guard try Bool.fetchOne(db, sql: "SELECT 1 FROM athlete WHERE team = ?", arguments: [team]) == true
            else { throw ServerSetupError.teamNotFound(team) }
            try db.execute(
                sql: "INSERT INTO token(hash, team, created) VALUES (?, ?, ?)",
                arguments: [Tokens.hash(token), team, Date().timeIntervalSince1970])
        }
        return token
    }

    /// Revokes every token of an athlete.
    public func revokeTokens(athlete name: String) throws(ServerSetupError) {
        try perform { db in
            guard let id = try String.fetchOne(db, sql: "SELECT id FROM athlete WHERE name = ?", arguments: [name])
            else { throw ServerSetupError.athleteNotFound(name) }
            try db.execute(sql: "DELETE FROM token WHERE athlete_id = ?", arguments: [id])
        }
    }

    /// Every athlete, by name.
    public func athletes() throws(ServerSetupError) -> [Athlete] {
        try perform { db in
            try Row.fetchAll(db, sql: "SELECT id, name, team FROM athlete ORDER BY name").compactMap(Self.athlete)
        }
    }

    /// The athletes of a team, by name.
    func athletes(team: String) throws(ServerSetupError) -> [Athlete] {
        try perform { db in
            try Row.fetchAll(db, sql: "SELECT id, name, team FROM athlete WHERE team = ? ORDER BY name", arguments: [team])
                .compactMap(Self.athlete)
        }
    }

    func athlete(named name: String) throws(ServerSetupError) -> Athlete? {
        try perform { db in
            try Row.fetchOne(db, sql: "SELECT id, name, team FROM athlete WHERE name = ?", arguments: [name])
                .flatMap(Self.athlete)
        }
    }

    /// Who `token` speaks for; nil for an unknown or revoked token.
    func principal(token: String) throws(ServerSetupError) -> Principal? {
        let hash = Tokens.hash(token)
        return try perform { db -> Principal? in
            guard let row = try Row.fetchOne(db, sql: "SELECT athlete_id, team FROM token WHERE hash = ?", arguments: [hash])
            else { return nil }
            if let team: String = row["team"] { return .coach(team: team) }
            guard let id: String = row["athlete_id"],
                let athleteRow = try Row.fetchOne(
                    db, sql: "SELECT id, name, team FROM athlete WHERE id = ?", arguments: [id]),
                let athlete = Self.athlete(athleteRow)
            else { return nil }
            return .athlete(athlete)
        }
    }

    private static func athlete(_ row: Row) -> Athlete? {
        guard let id = UUID(uuidString: row["id"] ?? "") else { return nil }
        return Athlete(id: id, name: row["name"], team: row["team"])
    }

    /// Records `athlete` as the owner of live session `id` unless it has one; returns the owner's id.
    func claimSession(_ id: UUID, athlete: Athlete) throws(ServerSetupError) -> UUID? {
        try perform { db in
            try db.execute(
                sql: "INSERT INTO live_session(id, athlete_id) VALUES (?, ?) ON CONFLICT(id) DO NOTHING",
                arguments: [id.uuidString, athlete.id.uuidString])
            return try String.fetchOne(db, sql: "SELECT athlete_id FROM live_session WHERE id = ?", arguments: [id.uuidString])
                .flatMap(UUID.init(uuidString:))
        }
    }

    /// The owner of live session `id`, if any athlete opened it.
    func sessionOwner(_ id: UUID) throws(ServerSetupError) -> UUID? {
        try perform { db in
            try String.fetchOne(db, sql: "SELECT athlete_id FROM live_session WHERE id = ?", arguments: [id.uuidString])
                .flatMap(UUID.init(uuidString:))
        }
    }

    /// Whether the directory answers (readiness).
    func ping() -> Bool {
        (try? queue.read { db in try Int.fetchOne(db, sql: "SELECT 1") }) == 1
    }
}
