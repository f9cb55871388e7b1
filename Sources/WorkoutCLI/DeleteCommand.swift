import ArgumentParser
import Foundation
import WorkoutModel
import WorkoutStore

/// `workout delete <id>`: removes a workout with its activities, samples and route.
struct DeleteCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "delete", abstract: "Delete a workout with its activities, samples and route.",
        discussion: """
            Prints the deleted workout's line (as `workout list` shows it); with --json, \
            {"deleted": "<id>"}. There is no confirmation prompt and no undo.
            """)

    @OptionGroup var store: StoreOptions
    @Argument(
        help: ArgumentHelp("The workout's id (`workout list` shows them).", valueName: "id"),
        transform: Parse.workoutID)
    var id: UUID
    @OptionGroup var output: OutputOptions

    struct Deleted: Encodable {
        var deleted: UUID
    }

    func run() throws {
        let database = try store.open()
        let workout = try userFacing { () throws(StoreError) in
            guard let workout = try database.workout(id: id) else { throw .workoutNotFound(id) }
            try database.delete(workout: id)
            return workout
        }
        if output.json {
            emitLine(try Format.json(Deleted(deleted: workout.id)))
        } else {
            emitLine("deleted " + (Format.workoutLines([workout]).first ?? workout.id.uuidString))
        }
    }
}
