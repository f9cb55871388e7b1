import Foundation
import Testing
import WorkoutFormats
import WorkoutModel
import WorkoutReplay
import WorkoutStore

/// The real device recordings: `../shared/data` next to the repository (CI has it), or
/// `$WORKOUT_SHARED_DATA`.
enum SharedData {
    static let directory: String = {
        if let path = ProcessInfo.processInfo.environment["WORKOUT_SHARED_DATA"], !path.isEmpty { return path }
        let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        return repository.deletingLastPathComponent().appendingPathComponent("shared/data").path
    }()

    static let names = [
        "al2_920xt-lap-swim", "al2_920xt-run", "fp_activity-large-fenxi2-multisport", "fp_sample-activity",
        "mk_sdk_activity_poolswim_with_hr", "mk_triathlon_summary_first", "mk_triathlon_summary_last",
    ]

    static func fitPath(_ name: String) -> String { directory + "/fit/" + name + ".fit" }

    static func bytes(_ name: String) throws -> [UInt8] {
        guard let data = FileManager.default.contents(atPath: fitPath(name)) else {
            throw MissingData(path: fitPath(name))
        }
        return [UInt8](data)
    }

    /// The device's own values for a file, as garmin-fit-sdk decoded them.
    static func expected(_ name: String) throws -> [String: Any] {
        let path = directory + "/expected/" + name + ".json"
        guard let data = FileManager.default.contents(atPath: path),
            let object = try JSONSerialization.jsonObject(with: data) as? [String: Any]
        else { throw MissingData(path: path) }
        return object
    }

    struct MissingData: Error, CustomStringConvertible {
        var path: String
        var description: String {
            "\(path) is missing: the tests read the real recordings from ../shared/data next to the repository "
                + "(or $WORKOUT_SHARED_DATA)"
        }
    }
}

/// A fresh store in a temporary folder.
func temporaryStore() throws -> WorkoutStore {
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("workout-formats-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    return try WorkoutStore(path: folder.appendingPathComponent("store.sqlite").path)
}

/// Garmin's official FIT SDK for Python in `.venv-fit` (scripts/ensure-python-sdk.sh installs it).
enum GarminSDK {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// The venv's interpreter, installing the SDK when missing (the test command does it first).
    static let python: Result<String, ScriptError> = {
        do throws(ScriptError) {
            let output = try run("/bin/bash", [repository.appendingPathComponent("scripts/ensure-python-sdk.sh").path])
            return .success(
                output.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: "\n").last.map(String.init)
                    ?? "")
        } catch {
            return .failure(error)
        }
    }()

    /// Runs scripts/fit-verify.py with `arguments`; returns its JSON output.
    static func verify(_ arguments: [String]) throws -> [String: Any] {
        let output = try run(
            try python.get(), [repository.appendingPathComponent("scripts/fit-verify.py").path] + arguments,
            allowFailure: true)
        guard let object = try JSONSerialization.jsonObject(with: Data(output.utf8)) as? [String: Any] else {
            throw ScriptError(detail: "fit-verify.py printed no JSON: \(output.prefix(500))")
        }
        return object
    }

    struct ScriptError: Error, CustomStringConvertible {
        var detail: String
        var description: String { detail }
    }

    static func run(
        _ executable: String, _ arguments: [String], allowFailure: Bool = false
    ) throws(ScriptError) -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        let output = Pipe()
        // Standard error to a file: a full pipe nobody reads would block the child.
        let errorPath = FileManager.default.temporaryDirectory.appendingPathComponent(
            "fit-verify-\(UUID().uuidString).err")
        _ = FileManager.default.createFile(atPath: errorPath.path, contents: nil)
        defer { try? FileManager.default.removeItem(at: errorPath) }
        process.standardOutput = output
        process.standardError = try? FileHandle(forWritingTo: errorPath)
        do {
            try process.run()
        } catch {
            throw ScriptError(detail: "cannot run \(executable): \(error)")
        }
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let errorText = (try? String(contentsOf: errorPath, encoding: .utf8)) ?? ""
        if process.terminationStatus != 0, !allowFailure {
            throw ScriptError(
                detail:
                    "\(executable) \(arguments.joined(separator: " ")) exited \(process.terminationStatus): \(errorText)"
            )
        }
        return String(decoding: data, as: UTF8.self)
    }
}
