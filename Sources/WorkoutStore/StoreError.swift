import Foundation
import WorkoutEngine

/// Everything that can go wrong with a store file or a store call; each says what and what to do.
///
/// When one is thrown while opening, the file was not modified.
public enum StoreError: Error, Sendable, Equatable, CustomStringConvertible {
    case notADatabase(path: String)
    case notAWorkoutStore(path: String)
    case corrupt(path: String, detail: String)
    case newerSchema(path: String, found: Int, supported: Int)
    case readOnly(path: String)
    case cannotCreate(path: String, detail: String)
    case locked(path: String)
    case workoutNotFound(UUID)
    case workoutExists(UUID)
    case sessionNotFound(UUID)
    case sessionNotEnded(state: String)
    case invalidQuery(String)
    /// A stored chunk of samples or route points does not decode; the rest of the store is readable.
    case corruptChunk(workout: UUID, detail: String)
    /// Upgrading the file to this build's schema failed; the file was left exactly as it was.
    case migrationFailed(path: String, detail: String)
    case database(path: String, detail: String)
    /// A statement ran longer than the store's statement time limit and was cancelled (nothing it would have
    /// written was kept).
    case timedOut
    /// A journal commit's changes do not continue the session's stored journal (the writer numbered past it: a
    /// commit it was told was done was not kept); nothing of the commit was written. The recording cannot go on:
    /// read the session back from its journal (`recoverActiveSession`), which holds every change kept.
    case journalOutOfStep(session: UUID, detail: String)
    /// The database server is older than the store needs (`found` and `needed` as PostgreSQL's
    /// `server_version_num`: 100023 is 10.23, 110000 is 11.0); nothing was written.
    case unsupportedServer(path: String, found: Int, needed: Int)
    case engine(EngineError)

    public var description: String {
        switch self {
        case .notADatabase(let path):
            "\(path) is not a SQLite database; point --db (or WORKOUT_DB) at a workout store or at a new file"
        case .notAWorkoutStore(let path):
            "\(path) is another program's SQLite database, not a workout store; it was left as it is. "
                + "Choose another file with --db"
        case .corrupt(let path, let detail):
            "\(path) is damaged (\(detail)); restore it from a backup, or start a new store with --db"
        case .newerSchema(let path, let found, let supported):
            "\(path) was written by a newer version (schema \(found), this build knows up to \(supported)); "
                + "upgrade the workout tool to open it"
        case .readOnly(let path):
            "\(path) cannot be written (read-only file or folder); check its permissions or choose another --db"
        case .cannotCreate(let path, let detail):
            "cannot create the store at \(path) (\(detail)); choose a writable location with --db"
        case .locked(let path):
            "\(path) is locked by another program; close it (or wait for it to finish) and try again"
        case .workoutNotFound(let id):
            "no workout with id \(id) in this store; `workout list` shows the ids"
        case .workoutExists(let id):
            "a workout with id \(id) is already stored; delete it first to replace it"
        case .sessionNotFound(let id):
            "no recording session \(id) in the journal"
        case .sessionNotEnded(let state):
            "the session is \(state); stop and end it before finishing the workout"
        case .invalidQuery(let detail):
            "invalid query: \(detail)"
        case .corruptChunk(let workout, let detail):
            "stored data of workout \(workout) is damaged (\(detail)); its other data and every other workout "
                + "stay readable. Delete the workout (`workout delete \(workout)`) or restore the store from a backup"
        case .migrationFailed(let path, let detail):
            "\(path) could not be upgraded to this version's storage (\(detail)); the file was not changed. "
                + "Keep using the previous version, or report the problem with this message"
        case .database(let path, let detail):
            "database error on \(path): \(detail)"
        case .timedOut:
            "a database statement took longer than its time limit and was cancelled; ask for less, or try again"
        case .journalOutOfStep(let session, let detail):
            "the journal of recording session \(session) does not continue where this commit starts (\(detail)): a "
                + "commit reported done before was not kept, and nothing of this one was written. Read the session "
                + "back from its journal and go on from there"
        case .unsupportedServer(let path, let found, let needed):
            "\(path) runs PostgreSQL \(Self.serverVersion(found)) (server_version_num \(found)); the workout store needs "
                + "PostgreSQL \(Self.serverVersion(needed)) or later (its live journal commit is a procedure that "
                + "commits). Nothing was written: upgrade the server (pg_upgrade), or point the URL at a PostgreSQL "
                + "\(Self.serverVersion(needed)) or later"
        case .engine(let error):
            error.description
        }
    }

    /// A `server_version_num` as PostgreSQL writes its version: 10.23 from 100023 (major and minor since 10), 11
    /// from 110000, 9.6.24 from 90624 (three parts before 10).
    static func serverVersion(_ number: Int) -> String {
        guard number < 100_000 else {
            let minor = number % 10_000
            return minor == 0 ? "\(number / 10_000)" : "\(number / 10_000).\(minor)"
        }
        return "\(number / 10_000).\(number / 100 % 100).\(number % 100)"
    }
}

/// Where the store lives unless told otherwise.
public enum StoreLocation {
    /// Environment variable naming the store file; `--db` wins over it.
    public static let environmentVariable = "WORKOUT_DB"

    /// `$WORKOUT_DB`, else `$XDG_DATA_HOME/workout-engine/workouts.sqlite`, else
    /// `~/.local/share/workout-engine/workouts.sqlite`.
    public static func defaultPath(environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        if let path = environment[environmentVariable], !path.isEmpty { return path }
        let base: String
        if let xdg = environment["XDG_DATA_HOME"], xdg.hasPrefix("/") {
            base = xdg
        } else {
            let home = environment["HOME"] ?? FileManager.default.homeDirectoryForCurrentUser.path
            base = home + "/.local/share"
        }
        return base + "/workout-engine/workouts.sqlite"
    }
}
