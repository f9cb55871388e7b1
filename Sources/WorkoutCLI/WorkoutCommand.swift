import ArgumentParser

/// The `workout` command: a thin shell over the engine and store.
@main
struct WorkoutCommand: ParsableCommand {
    static let version = "0.1.0"

    static let configuration = CommandConfiguration(
        commandName: "workout",
        abstract: "Record, replay and query workouts from wearable sensors.",
        discussion: """
            A workout session recording engine: a live session state machine and builder with \
            per-activity statistics for swim-bike-run races and single sports.
            """,
        version: version
    )
}
