import ArgumentParser
import Foundation
import WorkoutReport
import WorkoutStore

/// `workout report ID [--output FILE.html]`: one self-contained HTML page about a workout.
struct ReportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "report", abstract: "Write a workout's report: one HTML file with charts, to open in a browser.",
        discussion: """
            The page holds the summary, the legs table, heart rate, speed, power and cadence on one time \
            axis (legs shaded and labelled, pauses and auto-pauses hatched, values on hover), time in \
            heart-rate zones per leg, pool lengths with strokes and SWOLF, the route coloured by leg, the \
            heart-rate recovery after the stop and, for imported files, our figures next to the device's. \
            Everything is inline (no network when viewing). Zones come from the heart-rate reserve \
            (Karvonen): zone n starts at resting + (40 + 10n) % of (maximum − resting); defaults: maximum \
            190, resting 60. The file goes to --output (`-` for standard output), else report-<id>.html.
            """)

    @OptionGroup var store: StoreOptions
    @Argument(
        help: ArgumentHelp("The workout's id (`workout list` shows them).", valueName: "id"),
        transform: Parse.workoutID)
    var id: UUID
    @Option(
        name: .shortAndLong, help: ArgumentHelp("Where to write the HTML (`-`: standard output).", valueName: "path"))
    var output: String?
    @Option(help: ArgumentHelp("The athlete's maximum heart rate, bpm.", valueName: "bpm"))
    var maxHeartRate: Double = 190
    @Option(help: ArgumentHelp("The athlete's resting heart rate, bpm.", valueName: "bpm"))
    var restingHeartRate: Double = 60

    var options: ReportOptions {
        ReportOptions(maximumHeartRate: maxHeartRate, restingHeartRate: restingHeartRate)
    }

    func validate() throws {
        if let problem = options.problem { throw ValidationError(problem) }
    }

    func run() throws {
        let database = try store.open()
        let input: ReportInput
        do {
            input = try ReportInput.load(id: id, from: database)
        } catch {
            throw UserFacingError(error)
        }
        let html = WorkoutReport.html(input, options: options)
        let destination = output ?? "report-\(id.uuidString.lowercased()).html"
        if destination == "-" {
            FileHandle.standardOutput.write(Data(html.utf8))
            return
        }
        do {
            try Data(html.utf8).write(to: URL(fileURLWithPath: destination), options: .atomic)
        } catch {
            throw UserFacingError("cannot write \(destination): \(error.localizedDescription); choose another --output")
        }
        emitLine("wrote \(destination) (\(html.utf8.count) bytes)")
    }
}
