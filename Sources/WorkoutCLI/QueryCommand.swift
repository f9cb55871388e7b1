import ArgumentParser
import Foundation
import WorkoutModel
import WorkoutStore

/// `workout query`: the workouts matching a type, durations, dates and one activity's statistics.
struct QueryCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "query", abstract: "List the workouts matching conditions, newest first.",
        discussion: """
            The heart-rate and power conditions and --activity all apply to the same activity: \
            `--activity cycling --avg-heart-rate '>150' --avg-power '>=200'` finds workouts with one \
            cycling activity averaging over 150 bpm and at least 200 W. Power is cycling power for \
            cycling activities, running power for running ones, either otherwise. Durations are \
            active time. --from and --to select by the workout's start: from --from (inclusive) to \
            --to (exclusive; a bare date includes that whole day). Output as `workout list`.

            Types: \(Parse.activityTypeNames).
            """)

    @OptionGroup var store: StoreOptions

    @Option(
        name: .customLong("type"), help: ArgumentHelp("The workout's type.", valueName: "type"),
        transform: Parse.activityType)
    var workoutType: WorkoutActivityType?

    @Option(
        help: ArgumentHelp("The type of the activity the conditions apply to.", valueName: "type"),
        transform: Parse.activityType)
    var activity: WorkoutActivityType?

    @Option(
        help: ArgumentHelp("The activity's average heart rate, bpm: \(Parse.comparisonHelp).", valueName: "expr"),
        transform: Parse.comparison)
    var avgHeartRate: ComparisonExpression?

    @Option(
        help: ArgumentHelp("The activity's maximum heart rate, bpm.", valueName: "expr"), transform: Parse.comparison)
    var maxHeartRate: ComparisonExpression?

    @Option(
        help: ArgumentHelp("The activity's minimum heart rate, bpm.", valueName: "expr"), transform: Parse.comparison)
    var minHeartRate: ComparisonExpression?

    @Option(
        help: ArgumentHelp("The activity's average power, W.", valueName: "expr"), transform: Parse.comparison)
    var avgPower: ComparisonExpression?

    @Option(
        help: ArgumentHelp("Active duration at least this: \(Parse.durationHelp).", valueName: "duration"),
        transform: Parse.duration)
    var minDuration: TimeInterval?

    @Option(
        help: ArgumentHelp("Active duration at most this.", valueName: "duration"), transform: Parse.duration)
    var maxDuration: TimeInterval?

    @Option(
        help: ArgumentHelp("Started at or after this: \(Parse.dateHelp).", valueName: "date"),
        transform: Parse.date)
    var from: DateArgument?

    @Option(
        help: ArgumentHelp("Started before this (a bare date includes that whole day).", valueName: "date"),
        transform: Parse.date)
    var to: DateArgument?

    @Option(help: "Show at most this many workouts (the newest).") var limit: Int?

    @OptionGroup var output: OutputOptions

    func validate() throws {
        try validateLimit(limit)
        if let minDuration, let maxDuration, minDuration > maxDuration {
            throw ValidationError(
                "--min-duration (\(Format.duration(minDuration))) is longer than --max-duration "
                    + "(\(Format.duration(maxDuration)))")
        }
        if let from, let to, from.rangeStart >= to.rangeEnd {
            throw ValidationError(
                "--from (\(Format.timestamp(from.rangeStart))) must come before --to (\(Format.timestamp(to.rangeEnd)))"
            )
        }
    }

    /// The store queries this command runs: one, or with --avg-power and an activity type that
    /// does not say which power, one per power type (the results are merged).
    var queries: [WorkoutQuery] {
        var heartRate: [StatisticCondition] = []
        let bpm: [(ComparisonExpression?, StatisticAggregate)] = [
            (avgHeartRate, .average), (maxHeartRate, .maximum), (minHeartRate, .minimum),
        ]
        for case (let expression?, let aggregate) in bpm {
            heartRate.append(
                StatisticCondition(
                    .heartRate, aggregate, expression.comparison, Quantity(expression.value, .countPerMinute)))
        }
        let powerTypes: [QuantityType?]
        switch (avgPower, activity) {
        case (nil, _): powerTypes = [nil]
        case (_, .cycling): powerTypes = [.cyclingPower]
        case (_, .running): powerTypes = [.runningPower]
        default: powerTypes = [.cyclingPower, .runningPower]
        }
        return powerTypes.map { powerType in
            var conditions = heartRate
            if let powerType, let avgPower {
                conditions.append(
                    StatisticCondition(powerType, .average, avgPower.comparison, Quantity(avgPower.value, .watt)))
            }
            let predicates =
                activity == nil && conditions.isEmpty
                ? [] : [ActivityPredicate(activityType: activity, conditions: conditions)]
            return WorkoutQuery(
                activityType: workoutType, minimumDuration: minDuration, maximumDuration: maxDuration,
                dates: DateRange(start: from?.rangeStart, end: to?.rangeEnd, options: .strictStartDate),
                activities: predicates, limit: limit)
        }
    }

    func run() throws {
        let database = try store.open()
        let queries = self.queries
        var results: [[Workout]] = []
        for query in queries {
            results.append(try userFacing { () throws(StoreError) in try database.workouts(matching: query) })
        }
        let workouts = results.count == 1 ? results[0] : Self.merge(results, limit: limit)
        try printWorkouts(workouts, json: output.json, emptyNote: "no workouts match")
    }

    /// Several newest-first results as one: each workout once, newest first (the first list's
    /// order among equal starts), at most `limit`.
    static func merge(_ results: [[Workout]], limit: Int?) -> [Workout] {
        var seen = Set<UUID>()
        var workouts = results.joined().filter { seen.insert($0.id).inserted }
        workouts.sort { $0.start > $1.start }  // stable
        return limit.map { Array(workouts.prefix($0)) } ?? workouts
    }
}
