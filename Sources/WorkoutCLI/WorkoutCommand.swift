import ArgumentParser
import Foundation
import WorkoutStore

/// The `workout` command: a thin shell over the engine and store.
@main
struct WorkoutCommand: AsyncParsableCommand {
    static let version = "0.1.0"

    static let configuration = CommandConfiguration(
        commandName: "workout",
        abstract: "Record, replay and query workouts from wearable sensors.",
        discussion: """
            A workout session recording engine: a live session state machine and builder with \
            per-activity statistics for swim-bike-run races and single sports, stored in SQLite.
            """,
        version: version,
        subcommands: [
            ReplayCommand.self, ListCommand.self, ShowCommand.self, QueryCommand.self, DeleteCommand.self,
            RecordCommand.self, PortsCommand.self, DebugRecordCommand.self, ImportCommand.self, ExportCommand.self,
            ServeCommand.self, AthletesCommand.self, PushCommand.self,
            ReportCommand.self, SensorsCommand.self,
        ]
    )
}

/// The `--db` option every store command takes.
struct StoreOptions: ParsableArguments {
    @Option(
        name: .long,
        help: ArgumentHelp(
            "The store file (default: $\(StoreLocation.environmentVariable), else $XDG_DATA_HOME/workout-engine/workouts.sqlite).",
            valueName: "path"))
    var db: String?

    /// Opens the store; a store error becomes a one-line message and exit status 1. A store other
    /// users can read gets a warning on standard error with the command that fixes it (never a chmod).
    func open() throws -> WorkoutStore {
        let path = db ?? StoreLocation.defaultPath()
        // Checked before opening: an open store has WAL and shared-memory files (with the file's
        // mode) that go away when this command exits; a fix naming them would then fail.
        let warning = StoreFiles.permissionWarning(path: path)
        let store: WorkoutStore
        do {
            store = try WorkoutStore(path: path)
        } catch {
            throw UserFacingError(error)
        }
        if let warning {
            FileHandle.standardError.write(Data((warning + "\n").utf8))
        }
        return store
    }
}

/// Prints a store or engine error as the tool's one-line message.
struct UserFacingError: Error, CustomStringConvertible {
    var description: String
    init(_ error: any Error) {
        description = String(describing: error)
    }

    init(_ message: String) {
        description = message
    }
}

/// Writes a line to standard output at once (unbuffered), for scripts and supervising processes.
func emitLine(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}
