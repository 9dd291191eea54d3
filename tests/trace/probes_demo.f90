! A small Fortran program for the libnth-probes test: compute calls
! small_step n times; the program calls compute twice (5 and 3 steps).
module work
contains
  subroutine small_step(x)
    real(8), intent(inout) :: x
    x = x * 1.0001d0 + 1.0d0
  end subroutine small_step

  subroutine compute(n, x)
    integer, intent(in) :: n
    real(8), intent(inout) :: x
    integer :: i
    do i = 1, n
      call small_step(x)
    end do
  end subroutine compute
end module work

program probes_demo
  use work
  real(8) :: x
  x = 0
  call compute(5, x)
  call compute(3, x)
  if (x < 8.0d0) stop 1
end program probes_demo
