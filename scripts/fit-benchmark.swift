// Decode timing for `scripts/bench.py fit`: compiled with Sources/WorkoutFormats/FIT (-O).
// Usage: fit-decode FILE [REPEAT]; prints the median milliseconds of reading and decoding FILE.
import Foundation

let arguments = CommandLine.arguments
guard arguments.count >= 2 else {
    FileHandle.standardError.write(Data("usage: fit-decode FILE [REPEAT]\n".utf8))
    exit(2)
}
let repeats = arguments.count > 2 ? max(1, Int(arguments[2]) ?? 20) : 20
var times: [Double] = []
var records = 0
for _ in 0..<repeats {
    let start = DispatchTime.now().uptimeNanoseconds
    guard let data = FileManager.default.contents(atPath: arguments[1]) else {
        FileHandle.standardError.write(Data("cannot read \(arguments[1])\n".utf8))
        exit(1)
    }
    do {
        let file = try FITDecoder.decode([UInt8](data))
        records = file.records.count
    } catch {
        FileHandle.standardError.write(Data("\(error)\n".utf8))
        exit(1)
    }
    times.append(Double(DispatchTime.now().uptimeNanoseconds - start) / 1_000_000)
}
times.sort()
print(String(format: "%.3f %d", times[times.count / 2], records))
