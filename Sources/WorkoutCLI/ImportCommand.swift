import ArgumentParser
import Foundation
import WorkoutFormats
import WorkoutImport
import WorkoutModel
import WorkoutStore

/// `workout import FILE.fit|DIR`: real recordings replayed through the live engine into the store.
struct ImportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import", abstract: "Import FIT files or an Apple Health export through the live engine and save them.",
        discussion: """
            Replays a FIT activity file (or every .fit file of a folder) through the same path as a \
            recording: session, builder and store, on a virtual clock (without a crash journal: a file can be \
            read again; workouts are saved in batches, each whole or not at all). Legs change at the file's \
            session boundaries, or with --auto-segment the engine's transition detection finds them, \
            and their sports, in any multisport. Every statistic is recomputed from the samples; --compare prints ours next to \
            the device's own per session and lap. Anomalies found in the file are listed. The same file \
            is imported once (the workout's id derives from its bytes). An Apple Health export \
            (export.zip, its unzipped folder or export.xml) imports every workout in it, each once \
            (docs/apple-health.md).
            """)

    @Argument(help: ArgumentHelp("A .fit file, a folder of them, or an Apple Health export.", valueName: "path"))
    var path: String
    @Flag(
        help: """
            Let the engine detect a multisport's legs and their sports (a triathlon, a duathlon, a pool \
            swim-run-swim) instead of using the file's sessions. A single session \
            becomes a swim-bike-run only if it is running, generic or multisport and its records show both \
            swimming and riding; a plain run, ride or pool swim keeps its sport.
            """)
    var autoSegment = false
    @Flag(help: "Print our figures next to the device's, per session and lap; a folder ends with the agreement summary.")
    var compare = false
    @Flag(help: "Refuse a damaged file whole instead of importing what precedes the damage.")
    var noSalvage = false
    @OptionGroup var store: StoreOptions
    @OptionGroup var output: OutputOptions

    /// One file's outcome, for --json.
    struct Outcome: Encodable {
        var file: String
        var workout: Workout?
        var anomalies: [String]?
        var comparison: [ComparisonRow]?
        var error: String?
    }

    /// `--compare --json` on a folder: every file's outcome and the fidelity summary.
    struct CompareOutput: Encodable {
        var files: [Outcome]
        var summary: FidelitySummary
    }

    func run() throws {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            throw UserFacingError("\(path): no such file or folder; give a .fit file or a folder of .fit files")
        }
        let files: [String]
        if isDirectory.boolValue, AppleHealthReader.exportFiles(inFolder: path) != nil {
            // An unzipped Apple Health export: one export, many workouts.
            files = [path]
        } else if isDirectory.boolValue {
            // Every file of the folder a reader knows, by its content or extension.
            let names = (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []
            files = names.sorted().map { (path as NSString).appendingPathComponent($0) }.filter {
                var folder: ObjCBool = false
                return FileManager.default.fileExists(atPath: $0, isDirectory: &folder) && !folder.boolValue
                    && FileImport.reader(forFileAt: $0) != nil
            }
            guard !files.isEmpty else {
                throw UserFacingError("\(path) holds no file to import (.fit, an Apple Health export.zip or export.xml)")
            }
        } else {
            files = [path]
        }
        let database = try store.open()
        let options = ImportOptions(autoSegment: autoSegment, salvage: !noSalvage)
        let showProgress = isatty(STDERR_FILENO) == 1 && !output.json
        // Text output keeps no workout: each is printed as it is stored (an export of thousands imports in memory
        // that does not grow with it); JSON holds the outcomes for the document written at the end.
        var outcomes: [Outcome] = []
        var total = 0
        var fidelity = FidelitySummary()
        var failures = 0
        var skipped = 0
        // The files of a folder are one bulk load (each file's import is one too, inside it).
        let bulk = database.beginBulkImport()
        for (index, file) in files.enumerated() {
            let name = (file as NSString).lastPathComponent
            func record(_ outcome: Outcome) {
                total += 1
                if output.json { outcomes.append(outcome) }
            }
            /// One workout's result; `alone`: the only one of a single file (detailed, and its failure is the command's).
            func handle(_ imported: Result<FileImportResult, FileImportError>, alone: Bool) throws {
                switch imported {
                case .success(let result):
                    record(
                        Outcome(
                            file: file, workout: result.workout, anomalies: result.anomalies.map(\.detail),
                            comparison: result.comparisonRows))
                    if let fit = result.fit, let comparison = fit.comparison {
                        fidelity.add(
                            file: name, sessions: fit.sessions, damaged: fit.damage != nil,
                            workout: result.workout, comparison: comparison)
                    } else if let rows = result.comparisonRows {
                        // An Apple Health export: each workout compared by its rows, named by where it starts.
                        let line = (result.details as? HealthImportDetails).map { " line \($0.line)" } ?? ""
                        fidelity.add(file: name + line, rows: rows)
                    }
                    if !output.json { printResult(result, name: name, detailed: alone) }
                case .failure(let error):
                    if alone { throw UserFacingError(error) }
                    if case .alreadyImported = error {
                        skipped += 1
                        record(Outcome(file: file, error: error.description))
                        if !output.json { emitLine("skipped \(name): \(error)") }
                        return
                    }
                    failures += 1
                    record(Outcome(file: file, error: error.description))
                    if !output.json { FileHandle.standardError.write(Data("failed \(error)\n".utf8)) }
                }
            }
            // The first result waits until a second shows the file holds several (or the file ends with one).
            var first: Result<FileImportResult, FileImportError>?
            var count = 0
            var handled: (any Error)?
            func take(_ imported: Result<FileImportResult, FileImportError>) {
                count += 1
                guard handled == nil else { return }
                do {
                    if count == 1 {
                        first = imported
                        return
                    }
                    if let waiting = first {
                        first = nil
                        try handle(waiting, alone: false)
                    }
                    try handle(imported, alone: false)
                } catch {
                    handled = error
                }
            }
            do {
                try FileImport.runEach(path: file, into: database, options: options, compare: compare, progress: {
                    fraction in
                    guard showProgress else { return }
                    Self.drawProgress(done: Double(index) + fraction, total: files.count, name: name)
                }, each: take)
            } catch {
                take(.failure(error))
            }
            if showProgress { FileHandle.standardError.write(Data("\r\u{1B}[K".utf8)) }
            if let handled { throw handled }
            if let waiting = first { try handle(waiting, alone: files.count == 1 && count == 1) }
        }
        // A folder, or one file holding several workouts (an Apple Health export), answers as a list.
        let several = isDirectory.boolValue || total > 1
        if output.json {
            if several, compare {
                // With --compare a folder's output also carries the fidelity summary.
                emitLine(try Format.json(CompareOutput(files: outcomes, summary: fidelity)))
            } else if several {
                emitLine(try Format.json(outcomes))
            } else if let outcome = outcomes.first {
                emitLine(try Format.json(outcome))
            }
        } else if several {
            if compare {
                emitLine("")
                emitLine(Format.fidelity(fidelity).joined(separator: "\n"))
            }
            let imported = total - failures - skipped
            let of = total == files.count ? "\(files.count) files" : "\(total) workouts in \(files.count) files"
            emitLine("\(imported) imported, \(skipped) already there, \(failures) failed, of \(of), into \(database.path)")
        }
        // The store's indexes, if the import dropped them, are made again (seconds on a large store). Everything is
        // saved whatever comes of it: a failure is a warning, and the store makes them when it is next opened.
        do {
            try bulk.finish()
        } catch {
            FileHandle.standardError.write(
                Data(
                    ("warning: the store's activity indexes could not be made again (\(error)); every workout is "
                        + "saved, and the next command that opens the store makes them\n").utf8))
        }
        if failures > 0 { throw ExitCode.failure }
    }

    func printResult(_ result: FileImportResult, name: String, detailed: Bool) {
        if detailed {
            emitLine(Format.workoutDetail(result.workout).joined(separator: "\n"))
            emitLine("")
        }
        emitLine("imported \(name) as \(result.workout.id)")
        for anomaly in result.anomalies { emitLine("  anomaly: \(anomaly.detail)") }
        if let comparison = result.comparisonRows {
            emitLine("")
            emitLine(Format.comparison(comparison).joined(separator: "\n"))
        }
    }

    static func drawProgress(done: Double, total: Int, name: String) {
        let width = 30
        let filled = total > 0 ? min(width, Int((done / Double(total) * Double(width)).rounded(.down))) : 0
        let bar = String(repeating: "=", count: filled) + String(repeating: " ", count: width - filled)
        let file = total > 1 ? "  \(min(total, Int(done) + 1))/\(total)" : ""
        FileHandle.standardError.write(Data(Format.progressLine("[\(bar)]\(file)  \(name)").utf8))
    }
}

/// `workout export ID --format fit|gpx|tcx`: a saved workout as a file.
struct ExportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export", abstract: "Write a saved workout as a FIT, GPX or TCX file.",
        discussion: """
            FIT: an activity file with a session per activity (transitions included), laps, pool \
            lengths with strokes, records, timer events and the heart-rate recovery (its readings as \
            records after the end). GPX 1.1: the route \
            with heart rate and cadence in Garmin's TrackPointExtension. TCX: a multisport session (or \
            one activity) with laps and track points. The file goes to --output (`-` for standard \
            output), else <id>.<format> in the current folder, created readable by its owner only (0600).
            """)

    enum FileFormat: String, ExpressibleByArgument, CaseIterable {
        case fit, gpx, tcx
    }

    @OptionGroup var store: StoreOptions
    @Argument(
        help: ArgumentHelp("The workout's id (`workout list` shows them).", valueName: "id"),
        transform: Parse.workoutID)
    var id: UUID
    @Option(help: "fit, gpx or tcx.") var format: FileFormat
    @Option(help: ArgumentHelp("Where to write the file (`-`: standard output).", valueName: "path"))
    var output: String?

    func run() throws {
        let database = try store.open()
        let (workout, samples, route) = try userFacing {
            () throws(StoreError) -> (Workout, [QuantitySample], [RoutePoint]) in
            guard let workout = try database.workout(id: id) else { throw .workoutNotFound(id) }
            return (workout, try database.samples(workout: id), try database.route(workout: id))
        }
        let bytes: [UInt8]
        switch format {
        case .fit: bytes = FITExport.encode(workout, samples: samples, route: route)
        case .gpx: bytes = Array(GPXExport.encode(workout, samples: samples, route: route).utf8)
        case .tcx: bytes = Array(TCXExport.encode(workout, samples: samples, route: route).utf8)
        }
        let destination = output ?? "\(id.uuidString).\(format.rawValue)"
        if destination == "-" {
            FileHandle.standardOutput.write(Data(bytes))
            return
        }
        // Owner-only (0600): the file holds heart rate.
        try writePrivateFile(bytes, to: destination)
        emitLine("wrote \(destination) (\(bytes.count) bytes, \(format.rawValue))")
    }
}
