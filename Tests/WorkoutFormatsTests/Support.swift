import Foundation
import Testing
import WorkoutFormats
import WorkoutModel
import WorkoutReplay
import WorkoutStore
@_exported import WorkoutTestSupport

/// The real device recordings (WorkoutTestSupport's `SharedData`): the files these tests read, as bytes.
extension SharedData {
    static let names = [
        "al2_920xt-lap-swim", "al2_920xt-run", "fp_activity-large-fenxi2-multisport", "fp_sample-activity",
        "mk_sdk_activity_poolswim_with_hr", "mk_triathlon_summary_first", "mk_triathlon_summary_last",
    ]

    static func bytes(_ name: String) throws -> [UInt8] { [UInt8](try data(name)) }
}

/// A fresh store in a temporary folder.
func temporaryStore() throws -> WorkoutStore {
    let folder = try temporaryFolder("workout-formats")
    return try WorkoutStore(path: folder.appendingPathComponent("store.sqlite").path)
}

/// Garmin's official FIT SDK for Python in `.venv-fit` (scripts/ensure-python-sdk.sh installs it).
enum GarminSDK {
    static let repository = SharedData.repository

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
