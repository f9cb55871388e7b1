import ArgumentParser
import Foundation
import WorkoutModel
import WorkoutStore

/// `workout show <id>`: one workout with a table of its activities.
struct ShowCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "show", abstract: "Show a workout and a table of its activities.",
        discussion: """
            The workout's summary, then one row per activity: number, type, start offset from the \
            workout's start, elapsed and active duration, distance, average and maximum heart rate, \
            speed or pace (min/km for running and walking, min/100 m for swimming, km/h otherwise) \
            and average power; the last row holds the workout's totals. With --json, the workout.
            """)

    @OptionGroup var store: StoreOptions
    @Argument(
        help: ArgumentHelp("The workout's id (`workout list` shows them).", valueName: "id"),
        transform: Parse.workoutID)
    var id: UUID
    @OptionGroup var output: OutputOptions

    func run() throws {
        let database = try store.open()
        let found = try userFacing { () throws(StoreError) in try database.workout(id: id) }
        guard let workout = found.map(Format.presented) else { throw UserFacingError(StoreError.workoutNotFound(id)) }
        if output.json {
            emitLine(try Format.json(workout))
        } else {
            emitLine(Format.workoutDetail(workout).joined(separator: "\n"))
        }
    }
}
