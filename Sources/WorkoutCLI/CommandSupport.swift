import ArgumentParser
import Foundation
import WorkoutModel
import WorkoutStore

/// The `--json` flag of the reading and deleting commands.
struct OutputOptions: ParsableArguments {
    @Flag(help: "Print JSON (sorted keys, ISO 8601 dates) instead of text, for scripts.")
    var json = false
}

/// Runs a store call; a store error becomes the tool's one-line message and a non-zero exit.
func userFacing<T>(_ body: () throws(StoreError) -> T) throws(UserFacingError) -> T {
    do {
        return try body()
    } catch {
        throw UserFacingError(error)
    }
}

/// Prints workouts one per line (text) or as a JSON array; a note on standard error when there
/// are none, so standard output stays empty for scripts.
func printWorkouts(_ stored: [Workout], json: Bool, emptyNote: String) throws {
    let workouts = stored.map(Format.presented)
    if json {
        emitLine(try Format.json(workouts))
    } else if workouts.isEmpty {
        FileHandle.standardError.write(Data((emptyNote + "\n").utf8))
    } else {
        emitLine(Format.workoutLines(workouts).joined(separator: "\n"))
    }
}

/// Checks a `--limit` value.
func validateLimit(_ limit: Int?) throws {
    if let limit, limit < 1 {
        throw ValidationError("--limit must be at least 1 (got \(limit))")
    }
}
