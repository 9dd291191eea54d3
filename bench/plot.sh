#!/bin/sh
# Plots of the workload driver's data (bench/workload writes them):
#   speedup.{png,svg}      speedup over seq against threads, per build and kernel
#   efficiency.{png,svg}   efficiency of each mix, grouped bars per build
#   degradation.{png,svg}  degradation of each instance, grouped bars per build
# usage: bench/plot.sh DIR   (DIR holds speedup.dat, mixes.dat, degradation.dat)
# The bar charts' y axis starts at 0 and reaches the largest value (a fixed
# 0..1.2 clipped a loaded machine's 12.9 without a mark); the key sits
# outside the plot, never over the bars.
set -eu
dir=${1:-$(dirname "$0")}
cd "$dir"
command -v gnuplot >/dev/null || { echo "plot.sh: gnuplot is not installed" >&2; exit 1; }
for term in png svg; do
    case $term in
        png) setterm="set terminal pngcairo size 900,560 noenhanced font 'sans,11'" ;;
        svg) setterm="set terminal svg size 900,560 noenhanced font 'sans,11'" ;;
    esac
    # pngcairo may be missing from gnuplot-nox: fall back to the gd png terminal.
    if [ $term = png ] && ! gnuplot -e "set terminal pngcairo" 2>/dev/null; then
        setterm="set terminal png size 900,560 noenhanced"
    fi
    if [ -s speedup.dat ] && grep -q '^[0-9]' speedup.dat; then
        nblocks=$(grep -c '^"' speedup.dat)
        cpus=$(sed -n 's/^# cpus \([0-9]*\)$/\1/p' speedup.dat); cpus=${cpus:-1}
        gnuplot <<GP
$setterm
set output 'speedup.$term'
set title 'Speedup over the sequential build (kernel time)'
set xlabel 'threads'
set ylabel 'speedup'
set key top left
set grid
set xtics 1
set yrange [0:*]
plot for [i=0:$nblocks-1] 'speedup.dat' index i using 1:2 with linespoints lw 2 title columnheader(1), \\
     (x < $cpus ? x : $cpus) with lines dt 2 lc rgb 'gray40' title 'ideal ($cpus CPUs)'
GP
    fi
    if [ -s mixes.dat ]; then
        nb=$(head -n1 mixes.dat | wc -w)
        gnuplot <<GP
$setterm
set output 'efficiency.$term'
set title 'Efficiency of each mix: sequential work / (CPUs x makespan)'
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set ylabel 'efficiency'
set yrange [0:*]
set grid ytics
set key outside right top
plot for [i=2:$nb] 'mixes.dat' using i:xtic(1) title columnheader(i)
GP
    fi
    if [ -s degradation.dat ]; then
        nb=$(head -n1 degradation.dat | wc -w)
        gnuplot <<GP
$setterm
set output 'degradation.$term'
set title 'Performance degradation: best standalone time / mean time in the mix'
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set ylabel 'degradation (1 = no loss)'
set yrange [0:*]
set grid ytics
set key outside right top
set xtics rotate by -20
plot for [i=2:$nb] 'degradation.dat' using i:xtic(1) title columnheader(i)
GP
    fi
done
