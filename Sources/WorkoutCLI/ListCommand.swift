import ArgumentParser
import Foundation
import WorkoutModel
import WorkoutStore

/// `workout list`: the stored workouts, newest first.
struct ListCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list", abstract: "List the stored workouts, newest first.",
        discussion: """
            One line per workout: id, start (ISO 8601, UTC), type, elapsed and active duration \
            (h:mm:ss), distance (all distance types, km) and average heart rate. With --json, an \
            array of workouts with their activities and statistics.
            """)

    @OptionGroup var store: StoreOptions
    @Option(help: "Show at most this many workouts (the newest).") var limit: Int?
    @OptionGroup var output: OutputOptions

    func validate() throws {
        try validateLimit(limit)
    }

    func run() throws {
        let database = try store.open()
        let workouts = try userFacing { () throws(StoreError) in
            try database.workouts(matching: WorkoutQuery(limit: limit))
        }
        try printWorkouts(workouts, json: output.json, emptyNote: "no workouts in \(database.path)")
    }
}
